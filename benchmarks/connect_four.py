"""Connect Four: win rate against OpenSpiel MCTS (random rollouts) with 100 and 1,000 simulations,
both seats, as a curve over up to 60 minutes of training (issue #3's target: >= 90% against
MCTS-1000 within 60 minutes on a 2-core machine).

    python -m benchmarks.connect_four                       # the experiment=connect_four preset
    python -m benchmarks.connect_four --minutes 10 algo=gumbel_alphazero

``train min`` excludes the time spent evaluating, ``wall min`` includes it; ``--minutes`` caps
the training time (`trainer.max_train_minutes`), so stronger or more frequent evaluations do not
shorten training. Extra arguments are Hydra overrides. Re-running resumes the run; ``--report`` only prints the
curve of an existing run.
"""

from __future__ import annotations

import argparse

from benchmarks.learning_runs import compose_train, eval_history
from mbrl.train import train


def print_curve(run_dir: str) -> None:
    history = eval_history(run_dir)
    if not history:
        print(f"no evaluations in {run_dir}")
        return
    opponents = [k for k in history[0] if k.startswith("mcts")]
    header = f"{'step':>7} {'train min':>9} {'wall min':>8}" + "".join(
        f" {o + ' W/D/L':>16} {'score':>6}" for o in opponents
    )
    print(header + f" {'elo':>7}")
    print("-" * len(header + " elo     "))
    for record in history:
        wall = record.get("wall_seconds", float("nan")) / 60  # evaluation included
        line = f"{record['step']:>7} {record['train_seconds'] / 60:>9.1f} {wall:>8.1f}"
        for name in opponents:
            r = record[name]
            line += f" {r['wins']:>5}/{r['draws']}/{r['losses']:<6} {r['score']:>6.2f}"
        print(line + f" {record.get('elo', float('nan')):>7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--run-dir", default="runs/bench_connect_four")
    parser.add_argument("--report", action="store_true", help="only print an existing run's curve")
    args, overrides = parser.parse_known_args()
    if not args.report:
        cfg = compose_train(
            "experiment=connect_four",
            f"run_dir={args.run_dir}",
            f"trainer.max_train_minutes={args.minutes}",
            *overrides,
        )
        train(cfg)
    print_curve(args.run_dir)


if __name__ == "__main__":
    main()
