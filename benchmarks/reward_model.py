"""The learned reward model (`llm_bridge.reward_model`) on Countdown-24: how well it agrees with
the exact labels on held-out puzzles, how a search and best-of-N over-optimise against it, and
what holds that back.

    python -m benchmarks.reward_model                 # table and plot
    python -m benchmarks.reward_model --quick         # fewer prompts, samples and steps

1. Judges, trained on solver labels of the training puzzles (partial solutions: can they still
   reach 24? finished ones: are they correct?): a *strong* reward model (``--steps`` on
   ``--per-puzzle`` labelled completions each) and ``--members`` *weak* ones (``--weak-steps``
   on ``--weak-per-puzzle``, different seeds); precision and recall per kind on the test
   puzzles. The weak one stands for the usual case, a judge that is good on average but has
   blind spots a search can find.
2. A threshold per judge, calibrated per score (`calibrated_threshold`: where the judge is right
   ``--precision`` of the time at that score) on the pre-trained TinyLM's own samples of
   ``--calibration-prompts`` training puzzles the judges never saw.
3. Best-of-N: ``--max-n`` samples per test prompt from the TinyLM (experiment=countdown_pretrain,
   trained first if ``--run-dir`` has none); for each N, each judge picks one of the first N and
   the pick is checked exactly. The over-optimisation curve is the judge's own mean score of its
   picks beside their exact solve rate. Forward passes per prompt: the samples' passes plus the
   judge's (one per sample per member).
4. The same judges inside a search (``--simulations``, PUCT over whole steps,
   `llm_bridge.learned_judge.JudgedStepEnv`): a judge accepts finished completions (the search
   stops at the first it accepts) and values partial ones. Mitigations: the weak judge's
   calibrated threshold, its ensemble (the lowest member's score), and its score mixed half and
   half with the LM's value head; the exact verifier's search for reference.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.countdown_decoding import pretrained
from llm_bridge.decoding import decode
from llm_bridge.fitting import fit
from llm_bridge.learned_judge import Judge, JudgedStepEnv
from llm_bridge.reward_model import (
    RewardEnsemble,
    RewardModel,
    RewardModelSettings,
    RewardObjective,
    as_examples,
    calibrated_threshold,
    classification_report,
    labelled_examples,
)
from llm_bridge.step_env import StepTextEnv
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.train_text import build_env
from mbrl.config import OptimConfig
from mbrl.system import System


def train_reward_model(puzzles, tokenizer, per_puzzle, steps, seed, args) -> RewardModel:
    torch.manual_seed(seed)
    texts = labelled_examples(puzzles, tokenizer, per_puzzle, seed=seed)
    model = RewardModel(
        RewardModelSettings(tokenizer.vocab_size, layers=args.layers, width=args.width)
    )
    system = System(model, RewardObjective(), OptimConfig(lr=args.lr))
    fit(system, as_examples(texts), steps=steps, batch_size=256, seed=seed)
    return model


def train_judges(puzzles, tokenizer, args) -> dict[str, Judge]:
    """The strong reward model, one weak one, and the weak ones' ensemble."""
    strong = train_reward_model(puzzles, tokenizer, args.per_puzzle, args.steps, args.seed, args)
    weak = [
        train_reward_model(
            puzzles, tokenizer, args.weak_per_puzzle, args.weak_steps, args.seed + 1 + i, args
        )
        for i in range(args.members)
    ]
    return {"strong": strong, "weak": weak[0], "weak ensemble": RewardEnsemble(weak)}


def best_of_n_curve(rewards, scores, values, ns, passes_per_sample):
    """Rows ``(N, judge, exact solve rate of the picks, the judge's mean score, passes)``;
    ``rewards`` and ``values`` are [prompts, max_n], ``scores`` maps judges to such arrays."""
    rows = []
    index = np.arange(len(rewards))
    for n in ns:
        picks = {  # judge -> (its scores, the pick per prompt, passes per prompt)
            name: (s[:, :n], s[:, :n].argmax(1), n * (passes_per_sample + judge_passes))
            for name, (s, judge_passes) in scores.items()
        }
        weak, weak_passes = scores["weak"]
        mixed = weak[:, :n] * values[:, :n]
        picks["weak x value"] = (
            weak[:, :n],
            mixed.argmax(1),
            n * (passes_per_sample + weak_passes + 1),  # + the value head's pass
        )
        for name, (s, pick, passes) in picks.items():
            rows.append((n, name, rewards[index, pick].mean(), s[index, pick].mean(), passes))
        exact = rewards[:, :n].max(1).mean()
        rows.append((n, "exact verifier", exact, np.nan, n * passes_per_sample))
    return rows


def value_after(env, decoded) -> np.ndarray:
    """The LM's value head after each finished completion (its own success estimate; one pass
    each, since decoding never evaluates a finished sequence)."""
    eos = env.tokenizer.eos_id
    sequences = [ids[:-1] if ids and ids[-1] == eos else ids for ids in decoded.ids]
    return env.adapter.evaluate(sequences).value.numpy().astype(np.float64)


def search_judges(judges, thresholds) -> dict[str, tuple]:
    """Search judge name -> (judge or None for the exact verifier, weight, threshold)."""
    return {
        "exact verifier": (None, 1.0, 0.5),
        "strong": (judges["strong"], 1.0, 0.5),
        "weak": (judges["weak"], 1.0, 0.5),
        "weak, calibrated": (judges["weak"], 1.0, thresholds["weak"]),
        "weak ensemble": (judges["weak ensemble"], 1.0, 0.5),
        "weak + value": (judges["weak"], 0.5, 0.5),
    }


def judged_search(adapter, tokenizer, task, items, judges, simulations, seed):
    """Rows ``(simulations, judge, exact solve rate, the judge's mean score, passes)``."""
    rows = []
    for sims in simulations:
        for name, (judge, weight, threshold) in judges.items():
            if judge is None:
                env = StepTextEnv(adapter, tokenizer, task)
            else:
                env = JudgedStepEnv(
                    adapter, tokenizer, task, judge, judge_weight=weight, threshold=threshold
                )
            decoded = decode(env, items, "mcts", budget=sims, seed=seed)
            pairs = zip(items, decoded.completions, strict=True)
            exact = [task.reward(item, text) for item, text in pairs]
            scores = [getattr(env, "scores", {}).get(ids, np.nan) for ids in decoded.ids]
            passes = decoded.forward_passes + getattr(env, "judge_passes", 0)
            rows.append((sims, name, np.mean(exact), np.mean(scores), passes / len(items)))
            print(f"  search {sims:>4} {name}: {np.mean(exact):.3f}", flush=True)
    return rows


def policy_samples(env, items, per_item: int, seed: int):
    """``per_item`` sampled completions of each item: (the decoding, its exact rewards)."""
    rows = [item for item in items for _ in range(per_item)]
    decoded = decode(env, rows, "sample", seed=seed)
    return decoded, decoded.rewards


def print_rows(title: str, x_name: str, rows) -> None:
    print(f"\n{title}")
    print(f"{x_name:>4} {'judge':>18} {'solved (exact)':>14} {'judge score':>11} {'passes':>8}")
    for x, judge, solved, score, passes in rows:
        print(f"{x:>4} {judge:>18} {solved:>14.3f} {score:>11.3f} {passes:>8.1f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run-dir", default="runs/countdown_pretrain_seed0")
    parser.add_argument("--prompts", type=int, default=262, help="test prompts (0 = all)")
    parser.add_argument("--max-n", type=int, default=64)
    parser.add_argument("--per-puzzle", type=int, default=8, help="labelled completions each")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--weak-per-puzzle", type=int, default=2)
    parser.add_argument("--weak-steps", type=int, default=150)
    parser.add_argument("--members", type=int, default=3, help="weak models in the ensemble")
    parser.add_argument("--calibration-prompts", type=int, default=200)
    parser.add_argument("--precision", type=float, default=0.9)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--simulations",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[8, 32, 128],
        help="search budgets, comma-separated",
    )
    parser.add_argument("--plot", default="benchmarks/results/reward_model.png")
    parser.add_argument("--quick", action="store_true")
    args, overrides = parser.parse_known_args(argv)
    if args.calibration_prompts < 1:
        parser.error(f"--calibration-prompts must be at least 1, got {args.calibration_prompts}")
    if args.quick:
        args.prompts, args.max_n, args.steps, args.per_puzzle = 40, 16, 300, 4
        args.calibration_prompts, args.simulations = 60, [8, 32]
    start = time.perf_counter()
    loaded = pretrained(args.run_dir, overrides)
    split = task_from_spec(loaded.task)
    cut = len(split.train) - args.calibration_prompts  # the judges never see the rest
    fitted, calibration = split.train[:cut], split.train[cut:]
    judges = train_judges(fitted, loaded.tokenizer, args)
    held_out = labelled_examples(split.test, loaded.tokenizer, args.per_puzzle, seed=10**6)
    print(f"reward model: {sum(p.numel() for p in judges['strong'].parameters()):,} parameters")
    print(
        f"{'judge':>13} {'kind':>9} {'precision':>9} {'recall':>7} {'accuracy':>8} {'positives':>9}"
    )
    for name, judge in judges.items():
        for kind, m in classification_report(judge, held_out).items():
            print(
                f"{name:>13} {kind:>9} {m['precision']:>9.3f} {m['recall']:>7.3f} "
                f"{m['accuracy']:>8.3f} {m['positives']:>9.3f}"
            )
    env = build_env(loaded.model, loaded.tokenizer, split.task, candidates=8, max_new_tokens=40)
    seen, seen_rewards = policy_samples(env, calibration, 8, args.seed + 1)
    thresholds = {
        name: calibrated_threshold(
            judge.probability([list(ids) for ids in seen.ids]), seen_rewards, args.precision
        )
        for name, judge in judges.items()
    }
    print(
        f"\nthresholds where each judge is right {args.precision:.0%} of the time at that score "
        f"(the TinyLM's samples of {len(calibration)} unseen training puzzles): "
        + ", ".join(f"{name} {t:.3f}" for name, t in thresholds.items())
    )
    items = split.test[: args.prompts or None]
    decoded, rewards = policy_samples(env, items, args.max_n, args.seed)
    shape = (len(items), args.max_n)
    sequences = [list(ids) for ids in decoded.ids]
    scores = {
        name: (judge.probability(sequences).reshape(shape), judge.passes_per_sequence)
        for name, judge in judges.items()
    }
    ns = [n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256) if n <= args.max_n]
    curve = best_of_n_curve(
        rewards.reshape(shape),
        scores,
        value_after(env, decoded).reshape(shape),
        ns,
        decoded.forward_passes / len(decoded.ids),
    )
    print_rows(f"best-of-N on {len(items)} test prompts", "N", curve)
    search_rows = judged_search(
        env.adapter,
        loaded.tokenizer,
        split.task,
        items,
        search_judges(judges, thresholds),
        args.simulations,
        args.seed,
    )
    print_rows(f"search over whole steps (PUCT) on {len(items)} test prompts", "sims", search_rows)
    _plot(curve, search_rows, args.plot)
    print(f"\n{time.perf_counter() - start:.0f} s")


def _plot(curve, search_rows, path: str) -> None:
    """Exact solve rate (solid) and the judge's own score (dashed) per judge, against N and
    against simulations: where the lines part, the judge is being over-optimised."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(1, 2, figsize=(11, 4.2))
    for axes, rows, x_label in (
        (panels[0], curve, "N (best-of-N)"),
        (panels[1], search_rows, "simulations per step (PUCT)"),
    ):
        for judge in dict.fromkeys(r[1] for r in rows):
            mine = [r for r in rows if r[1] == judge]
            xs = [r[0] for r in mine]
            (line,) = axes.plot(xs, [r[2] for r in mine], marker="o", label=judge)
            if judge != "exact verifier":
                axes.plot(xs, [r[3] for r in mine], ls="--", color=line.get_color(), alpha=0.7)
        axes.set_xscale("log", base=2)
        axes.set_xlabel(x_label)
        axes.set_ylabel("solved (exact); dashed: the judge's score")
        axes.grid(alpha=0.3)
    panels[0].legend(fontsize=8)
    panels[1].legend(fontsize=8)
    figure.suptitle("Countdown-24: a learned judge under optimisation")
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    print(f"\nplot: {path}")


if __name__ == "__main__":
    main()
