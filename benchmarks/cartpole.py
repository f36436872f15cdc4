"""CartPole-v1 with a learned model: environment steps and wall time until the mean evaluation
return (8 episodes, noise-free search) reaches 475, for MuZero, Gumbel MuZero and EfficientZero
over 3 seeds. Issue #4's target: within 20,000 environment steps on this 2-core CPU.

    python -m benchmarks.cartpole                              # 3 algorithms x 3 seeds
    python -m benchmarks.cartpole --algos muzero --seeds 0 trainer.max_steps=2000

Extra arguments are Hydra overrides of experiment=cartpole. ``env steps`` and ``train s`` are read
at the first evaluation that reached the target (evaluation time excluded); runs that never
reach it within trainer.max_steps report their best evaluation instead.
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.learning_runs import compose_train, eval_history
from mbrl.train import train


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--algos", default="muzero,gumbel_muzero,efficientzero")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--run-root", default="runs/bench_cartpole")
    args, overrides = parser.parse_known_args()
    rows = []
    for algo in args.algos.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            run_dir = f"{args.run_root}/{algo}_seed{seed}"
            cfg = compose_train(
                "experiment=cartpole",
                f"algo={algo}",
                f"seed={seed}",
                f"run_dir={run_dir}",
                "overwrite=true",
                "trainer.progress_bar=false",
                *overrides,
            )
            summary = train(cfg)
            history = eval_history(run_dir)
            solved = summary["perfect_at"]
            best = solved or max(history, key=lambda r: r["return_mean"])
            rows.append((algo, seed, solved is not None, best))
            print(f"{algo} seed {seed}: {best}", flush=True)
    print(
        f"\n{'algorithm':<14} {'seed':>4} {'solved':>6} {'env steps':>9} {'grad steps':>10} "
        f"{'train s':>8} {'return':>7}"
    )
    for algo, seed, solved, r in rows:
        print(
            f"{algo:<14} {seed:>4} {solved!s:>6} {r['env_steps']:>9} {r['step']:>10} "
            f"{r['train_seconds']:>8.1f} {r['return_mean']:>7.1f}"
        )
    print()
    for algo in args.algos.split(","):
        done = [r for a, _, s, r in rows if a == algo and s]
        if done:
            steps = [r["env_steps"] for r in done]
            seconds = [r["train_seconds"] for r in done]
            print(
                f"{algo:<14} solved {len(done)}/{sum(a == algo for a, *_ in rows)}: median "
                f"{statistics.median(steps):.0f} env steps, {statistics.median(seconds):.0f} s"
            )
        else:
            print(f"{algo:<14} solved 0/{sum(a == algo for a, *_ in rows)}")


if __name__ == "__main__":
    main()
