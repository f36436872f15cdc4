"""Tic-tac-toe: wall time until perfect play, and the share of all 4,520 reachable non-terminal
positions where the raw policy's first choice is minimax-optimal. Perfect play (the preset's
stopping rule, ``eval.exhaustive``) means no line lost against every opponent move at every
turn, in either seat; the learned-model preset stops at no game lost to minimax in 200.

    python -m benchmarks.tictactoe                 # 3 seeds of experiment=tictactoe
    python -m benchmarks.tictactoe --seeds 0 algo=gumbel_alphazero
    python -m benchmarks.tictactoe --experiment tictactoe_muzero   # a learned model

Extra arguments are Hydra overrides. Times exclude evaluation (``train s``) and include it
(``wall s``).
"""

from __future__ import annotations

import argparse
import time

from benchmarks.learning_runs import compose_train, eval_history
from mbrl.train import train


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--experiment", default="tictactoe", help="or tictactoe_muzero")
    parser.add_argument("--run-root", default="runs/bench_tictactoe")
    args, overrides = parser.parse_known_args()
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        run_dir = f"{args.run_root}/seed{seed}"
        cfg = compose_train(
            f"experiment={args.experiment}",
            f"seed={seed}",
            f"run_dir={run_dir}",
            "overwrite=true",
            "trainer.progress_bar=false",
            *overrides,
        )
        start = time.perf_counter()
        summary = train(cfg)
        wall = time.perf_counter() - start
        last = eval_history(run_dir)[-1]
        rows.append(
            (
                seed,
                summary["perfect_at"] is not None,
                summary["steps"],
                last["train_seconds"],
                wall,
                _lines_lost(last),
                f"{last['minimax']['losses']}/{last['minimax']['games']}",
                last.get("policy_optimal", float("nan")),
            )
        )
    print(
        f"\n{'seed':>4} {'perfect':>7} {'steps':>6} {'train s':>8} {'wall s':>7} "
        f"{'lines lost':>10} {'L vs minimax':>12} {'policy optimal':>14}"
    )
    for seed, perfect, steps, train_s, wall, lines, losses, optimal in rows:
        print(
            f"{seed:>4} {perfect!s:>7} {steps:>6} {train_s:>8.1f} {wall:>7.1f} "
            f"{lines:>10} {losses:>12} {optimal:>14.3f}"
        )


def _lines_lost(record: dict) -> str:
    """Losing lines of the exhaustive check (both seats), or "-" where it did not run."""
    if "exhaustive" not in record:
        return "-"
    return str(sum(record["exhaustive"][seat]["losses"] for seat in ("first", "second")))


if __name__ == "__main__":
    main()
