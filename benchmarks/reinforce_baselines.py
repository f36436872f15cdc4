"""What a baseline buys REINFORCE on Countdown-24: the measured gradient variance and the
accuracy of one round of `lm_reinforce` with each ``llm.reinforce_baseline``.

    python -m benchmarks.reinforce_baselines                  # value, group_mean, none; seeds 0, 1
    python -m benchmarks.reinforce_baselines --seeds 0 --steps 50
    python -m benchmarks.reinforce_baselines --warmup-steps 100   # adds the refitted value baseline

Every run starts from the same pre-trained TinyLM (`benchmarks.countdown_methods`'s start,
trained first if ``--run-root`` has none), samples ``--samples`` completions per training puzzle
once and takes ``--steps`` updates on them. The objective logs ``gradient_variance`` on every
batch (`llm_bridge.objectives.policy_gradient_variance`: the trace of the covariance over the
batch's sequences of each one's policy gradient with respect to the logits, closed form); the
table gives its mean over the round and, in the last column, its ratio to no baseline's at the
same seed. Variance is only half the story (a baseline that cancels the signal would also lower
it), so the round's greedy test accuracy is beside it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from benchmarks.countdown_methods import pretrained
from benchmarks.learning_runs import compose_train
from llm_bridge.objectives import REINFORCE_BASELINES
from llm_bridge.train_text import train_text


def gradient_variances(run_dir: Path) -> np.ndarray:
    """Every logged ``train/gradient_variance`` of a run, in step order."""
    values = []
    for events in sorted((run_dir / "tb").glob("events.*")):
        accumulator = EventAccumulator(str(events), size_guidance={"scalars": 0})
        accumulator.Reload()
        if "train/gradient_variance" in accumulator.Tags()["scalars"]:
            values += [e.value for e in accumulator.Scalars("train/gradient_variance")]
    if not values:
        raise SystemExit(f"{run_dir} logged no train/gradient_variance")
    return np.asarray(values)


# The value baseline refitted on each round's samples before the policy moves
# (``--warmup-steps``; `llm_bridge.baseline_warmup`).
WARMED_VALUE = "value+warmup"


def run(baseline: str, seed: int, start: str, args) -> dict:
    warmup = args.warmup_steps if baseline == WARMED_VALUE else 0
    name = f"value_warmup{warmup}" if warmup else baseline
    run_dir = Path(args.run_root) / f"reinforce_{name}_s{seed}"
    cfg = compose_train(
        "experiment=countdown_reinforce",
        "game=countdown24",
        f"llm.init_from={start}",
        f"llm.reinforce_baseline={'value' if warmup else baseline}",
        f"llm.baseline_warmup_steps={warmup}",
        f"llm.samples_per_prompt={args.samples}",
        f"llm.round_steps={args.steps}",
        "llm.rounds=1",
        f"seed={seed}",
        f"run_dir={run_dir}",
        "overwrite=true",
        "trainer.progress_bar=false",
        "trainer.log_every=5",  # the variance is logged with the other metrics
        *args.overrides,
    )
    summary = train_text(cfg)
    variance = gradient_variances(run_dir)
    last = summary["rounds"][-1]
    return {
        "variance": float(variance.mean()),
        "median": float(np.median(variance)),
        "accuracy": last["test_greedy_accuracy"],
        # the baseline's mean prediction on the round's samples at its first update
        "baseline": last.get("warmup_value_after", last.get("warmup_value_before")),
        "success": last["train_solve_rate"],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baselines", default=",".join(REINFORCE_BASELINES))
    parser.add_argument("--seeds", type=lambda t: [int(x) for x in t.split(",")], default=[0, 1])
    parser.add_argument("--samples", type=int, default=7, help="completions per puzzle")
    parser.add_argument("--steps", type=int, default=300, help="updates on the round's samples")
    parser.add_argument("--run-root", default="runs/bench_methods")
    parser.add_argument(
        "--warmup-steps",
        type=int,
        default=0,
        help=f"also run the {WARMED_VALUE!r} row: the value baseline refitted alone for this "
        "many updates on the round's samples first (llm.baseline_warmup_steps)",
    )
    args, args.overrides = parser.parse_known_args(argv)
    baselines = args.baselines.split(",")
    choices = [*REINFORCE_BASELINES, WARMED_VALUE]
    bad = sorted(set(baselines) - set(choices))
    if bad:
        parser.error(f"unknown baselines {bad}; choose from {choices}")
    if args.warmup_steps < 0:
        parser.error(f"--warmup-steps must be >= 0, got {args.warmup_steps}")
    if args.warmup_steps and WARMED_VALUE not in baselines:
        baselines.append(WARMED_VALUE)
    if WARMED_VALUE in baselines and not args.warmup_steps:
        parser.error(f"the {WARMED_VALUE!r} row needs --warmup-steps N (N >= 1)")
    args.task, args.tasks = "countdown24", ["countdown24"]
    start, start_accuracy = pretrained("countdown24", args)
    results = {(b, s): run(b, s, start, args) for s in args.seeds for b in baselines}
    print(f"\nREINFORCE, one round from the pre-trained start (greedy {start_accuracy:.3f})")
    if args.warmup_steps:
        print(f"({WARMED_VALUE}: {args.warmup_steps} value-only updates before the round)")
    header = (
        f"{'baseline':>12} {'seed':>4} {'grad var mean':>13} {'median':>8} {'test acc':>8} "
        f"{'x none var':>10} {'b at start':>10} {'solve rate':>10}"
    )
    print(header + "\n" + "-" * len(header))
    for (baseline, seed), r in results.items():
        none = results.get(("none", seed))
        # (with no sample solved, no baseline means no gradient at all: variance 0)
        ratio = f"{r['variance'] / none['variance']:.2f}" if none and none["variance"] else "-"
        start_b = "-" if r["baseline"] is None else f"{r['baseline']:.3f}"
        print(
            f"{baseline:>12} {seed:>4} {r['variance']:>13.4f} {r['median']:>8.4f} "
            f"{r['accuracy']:>8.3f} {ratio:>10} {start_b:>10} {r['success']:>10.3f}"
        )


if __name__ == "__main__":
    main()
