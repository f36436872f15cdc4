"""The learned reward model (`llm_bridge.reward_model`) on Countdown-24: how well it agrees with
the exact labels on held-out puzzles, and what happens when it is the only judge of best-of-N.

    python -m benchmarks.reward_model                 # table
    python -m benchmarks.reward_model --quick         # fewer prompts and samples

1. Train the reward model on solver labels of the training puzzles (partial solutions: can they
   still reach 24? finished ones: are they correct?); precision and recall per kind on the test
   puzzles.
2. Sample ``--max-n`` completions per test prompt from a pre-trained TinyLM
   (experiment=countdown_pretrain, trained first if ``--run-dir`` has none). For each N, pick
   one of the first N samples by a judge and check the pick exactly. Judges: the reward model
   alone (its own mean score of the picks beside their exact solve rate: the over-optimisation
   curve), the mitigations (the reward model times the LM's value head; the first sample the
   reward model passes at a threshold calibrated on training puzzles for 90% precision), and
   the exact verifier (the ceiling). Forward passes per prompt: N samples' passes plus N
   reward-model passes.
3. The same judges inside a search (``--simulations``, PUCT over whole steps,
   `llm_bridge.learned_judge.JudgedStepEnv`): the reward model accepts finished completions
   (the search stops at the first it accepts) and values partial ones, alone or mixed half and
   half with the LM's value head; the exact verifier's search for reference. The exact solve
   rate of what each search returns, the judge's mean score of it, and the passes per prompt
   (the LM's and the reward model's).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from benchmarks.countdown_decoding import pretrained
from llm_bridge.decoding import decode
from llm_bridge.fitting import fit
from llm_bridge.learned_judge import JudgedStepEnv
from llm_bridge.reward_model import (
    RewardModel,
    RewardModelSettings,
    RewardObjective,
    as_examples,
    classification_report,
    labelled_examples,
)
from llm_bridge.step_env import StepTextEnv
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.train_text import build_env
from mbrl.config import OptimConfig
from mbrl.system import System


def train_reward_model(split, tokenizer, args) -> tuple[RewardModel, list]:
    torch.manual_seed(args.seed)
    train = labelled_examples(split.train, tokenizer, args.per_puzzle, seed=args.seed)
    settings = RewardModelSettings(tokenizer.vocab_size, layers=args.layers, width=args.width)
    model = RewardModel(settings)
    system = System(model, RewardObjective(), OptimConfig(lr=args.lr))
    fit(system, as_examples(train), steps=args.steps, batch_size=256, seed=args.seed)
    return model, train


def calibrated_threshold(model: RewardModel, texts, precision: float = 0.9) -> float:
    """The lowest score at which finished completions of ``texts`` are correct at least
    ``precision`` of the time (1.0 if none is)."""
    complete = [t for t in texts if t.kind == "complete"]
    scores = model.probability([t.ids for t in complete])
    labels = np.array([t.label for t in complete])
    order = np.argsort(-scores)
    hits = np.cumsum(labels[order]) / np.arange(1, len(order) + 1)
    passing = np.flatnonzero(hits >= precision)
    return float(scores[order][passing[-1]]) if len(passing) else 1.0


def judged_curve(rewards, rm_scores, values, threshold, ns, passes_per_sample):
    """Rows ``(N, judge, exact solve rate of the picks, the judge's mean score, passes)``;
    arrays are [prompts, max_n]."""
    rows = []
    for n in ns:
        r, s, v = rewards[:, :n], rm_scores[:, :n], values[:, :n]
        rows_idx = np.arange(len(r))
        judged = n * (passes_per_sample + 1)  # each sample, then the reward model on it
        picks = {  # judge -> (pick per prompt, passes per prompt)
            "reward model": (s.argmax(1), judged),
            "reward model x value": ((s * v).argmax(1), judged + n),  # + the value head's
            "threshold, first passing": (
                np.where((s >= threshold).any(1), (s >= threshold).argmax(1), s.argmax(1)),
                judged,
            ),
        }
        for judge, (pick, passes) in picks.items():
            rows.append((n, judge, r[rows_idx, pick].mean(), s[rows_idx, pick].mean(), passes))
        rows.append((n, "exact verifier", r.max(1).mean(), float("nan"), n * passes_per_sample))
    return rows


def value_after(env, decoded) -> np.ndarray:
    """The LM's value head after each finished completion (its own success estimate; one pass
    each, since decoding never evaluates a finished sequence)."""
    eos = env.tokenizer.eos_id
    sequences = [ids[:-1] if ids and ids[-1] == eos else ids for ids in decoded.ids]
    return env.adapter.evaluate(sequences).value.numpy().astype(np.float64)


def judged_search(adapter, tokenizer, task, items, model, simulations, seed):
    """Rows ``(simulations, judge, exact solve rate, the judge's mean score, passes)``."""
    rows = []
    for sims in simulations:
        for judge, weight in (
            ("exact verifier", None),
            ("reward model", 1.0),
            ("reward model + value", 0.5),
        ):
            if weight is None:
                env = StepTextEnv(adapter, tokenizer, task)
            else:
                env = JudgedStepEnv(adapter, tokenizer, task, model, judge_weight=weight)
            decoded = decode(env, items, "mcts", budget=sims, seed=seed)
            pairs = zip(items, decoded.completions, strict=True)
            exact = [task.reward(item, text) for item, text in pairs]
            scores = [getattr(env, "scores", {}).get(ids, np.nan) for ids in decoded.ids]
            passes = decoded.forward_passes + getattr(env, "judge_passes", 0)
            rows.append((sims, judge, np.mean(exact), np.mean(scores), passes / len(items)))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run-dir", default="runs/countdown_pretrain_seed0")
    parser.add_argument("--prompts", type=int, default=262, help="test prompts (0 = all)")
    parser.add_argument("--max-n", type=int, default=64)
    parser.add_argument("--per-puzzle", type=int, default=8, help="labelled completions each")
    parser.add_argument("--steps", type=int, default=1500)
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
    parser.add_argument("--quick", action="store_true")
    args, overrides = parser.parse_known_args(argv)
    if args.quick:
        args.prompts, args.max_n, args.steps, args.per_puzzle = 40, 16, 300, 4
        args.simulations = [8, 32]
    start = time.perf_counter()
    loaded = pretrained(args.run_dir, overrides)
    split = task_from_spec(loaded.task)
    model, train_texts = train_reward_model(split, loaded.tokenizer, args)
    held_out = labelled_examples(split.test, loaded.tokenizer, args.per_puzzle, seed=10**6)
    print(f"reward model: {sum(p.numel() for p in model.parameters()):,} parameters")
    print(
        f"{'kind':>9} {'precision':>9} {'recall':>7} {'accuracy':>8} {'positives':>9} {'count':>6}"
    )
    for kind, m in classification_report(model, held_out).items():
        print(
            f"{kind:>9} {m['precision']:>9.3f} {m['recall']:>7.3f} {m['accuracy']:>8.3f} "
            f"{m['positives']:>9.3f} {m['count']:>6.0f}"
        )
    threshold = calibrated_threshold(model, train_texts)
    items = split.test[: args.prompts or None]
    env = build_env(loaded.model, loaded.tokenizer, split.task, candidates=8, max_new_tokens=40)
    rows = [item for item in items for _ in range(args.max_n)]
    decoded = decode(env, rows, "sample", seed=args.seed)
    rm_scores = model.probability([list(ids) for ids in decoded.ids])
    values = value_after(env, decoded)
    shape = (len(items), args.max_n)
    ns = [n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256) if n <= args.max_n]
    curve = judged_curve(
        decoded.rewards.reshape(shape),
        rm_scores.reshape(shape),
        values.reshape(shape),
        threshold,
        ns,
        decoded.forward_passes / len(rows),
    )
    print(f"\nbest-of-N on {len(items)} test prompts; threshold {threshold:.3f} (90% precision)")
    print(f"{'N':>4} {'judge':>26} {'solved (exact)':>14} {'judge score':>11} {'passes':>8}")
    for n, judge, solved, score, passes in curve:
        print(f"{n:>4} {judge:>26} {solved:>14.3f} {score:>11.3f} {passes:>8.1f}")
    print(f"\nsearch over whole steps (PUCT) on {len(items)} test prompts, judged by:")
    print(f"{'sims':>4} {'judge':>26} {'solved (exact)':>14} {'judge score':>11} {'passes':>8}")
    search_rows = judged_search(
        env.adapter, loaded.tokenizer, split.task, items, model, args.simulations, args.seed
    )
    for sims, judge, solved, score, passes in search_rows:
        print(f"{sims:>4} {judge:>26} {solved:>14.3f} {score:>11.3f} {passes:>8.1f}")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
