"""Countdown-24 decoding at matched compute: test accuracy against model forward passes for
greedy, sampling, best-of-N (the verifier picks), beam, MCTS and Gumbel MuZero search, with a
pre-trained TinyLM (experiment=countdown_pretrain; trained first if the run directory has none).

    python -m benchmarks.countdown_decoding                    # table + PNG plot
    python -m benchmarks.countdown_decoding --quick            # fewer prompts and budgets

Issue #5's targets: MCTS or Gumbel decoding at least +25 points of test accuracy over greedy at
no more than 64x its forward passes, and above best-of-N with the verifier at equal passes
(best-of-N's accuracy is interpolated in log passes between its measured budgets).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.learning_runs import compose_train
from llm_bridge.decoding import TreeSearchSettings, decode
from llm_bridge.lm_checkpoint import load_lm
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.train_text import build_env, train_text

BUDGETS = {
    "greedy": [1],
    "sample": [1],
    "beam": [2, 4],
    "best_of_n": [4, 8, 16, 32, 64],
    "mcts": [8, 16, 32, 64, 128],
    "gumbel": [8, 16, 32, 64],
}
QUICK = {"greedy": [1], "best_of_n": [4, 16], "mcts": [16, 64], "gumbel": [16]}


def pretrained(run_dir: str, overrides: list[str]):
    checkpoints = Path(run_dir) / "checkpoints"
    if not (checkpoints / "last.ckpt").exists() and not (checkpoints / "last.pt").exists():
        train_text(
            compose_train(
                "experiment=countdown_pretrain",
                f"run_dir={run_dir}",
                "trainer.progress_bar=false",
                *overrides,
            )
        )
    return load_lm(run_dir)


def interpolate(points: list[tuple[float, float]], passes: float) -> float:
    """Accuracy at ``passes`` by linear interpolation in log passes (clamped at the ends)."""
    xs, ys = zip(*sorted(points), strict=True)
    return float(np.interp(np.log(passes), np.log(xs), ys))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run-dir", default="runs/countdown_pretrain_seed0")
    parser.add_argument("--prompts", type=int, default=0, help="test prompts (0 = all 262)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--plot", default="benchmarks/results/countdown_decoding.png")
    parser.add_argument(
        "--gumbel-considered",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[8],
        help="Gumbel's considered actions m at the root, comma-separated (a row set each)",
    )
    parser.add_argument("--methods", help="only these methods, comma-separated")
    args, overrides = parser.parse_known_args()
    loaded = pretrained(args.run_dir, overrides)
    split = task_from_spec(loaded.task)
    items = split.test[: args.prompts] if args.prompts > 0 else split.test
    env = build_env(loaded.model, loaded.tokenizer, split.task, candidates=8, max_new_tokens=40)
    rows = []
    grid = QUICK if args.quick else BUDGETS
    wanted = (
        ["greedy", *args.methods.split(",")] if args.methods else list(grid)
    )  # greedy: the unit
    for method, budgets in grid.items():
        if method not in wanted:
            continue
        variants = {method: None}
        if method == "gumbel":  # the root's breadth: every m considered costs passes
            variants = {
                ("gumbel" if m == 8 else f"gumbel m={m}"): TreeSearchSettings(
                    max_num_considered_actions=m
                )
                for m in args.gumbel_considered
            }
        for label, settings in variants.items():
            for budget in budgets:
                began = time.time()
                decoded = decode(env, items, method, budget=budget, seed=0, settings=settings)
                passes = decoded.forward_passes / len(items)
                rows.append((label, budget, decoded.accuracy, passes, time.time() - began))
                print(f"{label} {budget}: {decoded.accuracy:.3f}", flush=True)
    greedy_passes = rows[0][3]
    greedy_accuracy = rows[0][2]
    print(f"\n{len(items)} test prompts; passes = sequences the model evaluated, per prompt\n")
    print(
        f"{'method':<12} {'budget':>6} {'accuracy':>8} {'vs greedy':>9} {'passes':>8} "
        f"{'x greedy':>8} {'best-of-N at =passes':>20} {'seconds':>8}"
    )
    best_of_n = [(p, a) for m, _, a, p, _ in rows if m == "best_of_n"]
    for method, budget, accuracy, passes, seconds in rows:
        matched = (
            f"{interpolate(best_of_n, passes):.3f}"
            if method.startswith(("mcts", "gumbel")) and best_of_n
            else ""
        )
        print(
            f"{method:<12} {budget:>6} {accuracy:>8.3f} {accuracy - greedy_accuracy:>+9.3f} "
            f"{passes:>8.1f} {passes / greedy_passes:>8.1f} {matched:>20} {seconds:>8.1f}"
        )
    _plot(rows, args.plot)


def _plot(rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for method in dict.fromkeys(r[0] for r in rows):
        points = sorted((p, a) for m, _, a, p, _ in rows if m == method)
        axes.plot(*zip(*points, strict=True), marker="o", label=method)
    axes.set_xscale("log")
    axes.set_xlabel("forward passes per prompt")
    axes.set_ylabel("test accuracy (Countdown-24)")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
