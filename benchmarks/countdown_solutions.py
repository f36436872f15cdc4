"""How many distinct solutions each search recipe finds per training puzzle, and at what cost.

Distillation learns from the solutions its searches find; imitation of solver solutions showed
that test accuracy grows with the number of distinct solutions per puzzle (about 10 per puzzle
reach 0.31; one per puzzle stalls near 0.2). This benchmark decodes training puzzles with a
pre-trained model and reports, per recipe: the share of puzzles any search solved, distinct
verified completions per solved puzzle, and forward passes per puzzle.

    python -m benchmarks.countdown_solutions --run-dir runs/cd_pre30 --prompts 200

Recipes (``--recipes``, comma-separated):
    sample:N          N samples at temperature 1 (what SFT on verified samples learns from)
    batched:N:S       N exploring MCTS-S searches batched together (noise 0.25, temperature 1)
    distinct:N:S      N MCTS-S searches one after another, each after a new solution
    distinct-plain:N:S  the same without root noise or sampled moves
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from llm_bridge.decoding import Decoded, TreeSearchSettings, decode, decode_distinct
from llm_bridge.lm_checkpoint import load_lm
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.train_text import build_env

EXPLORING = TreeSearchSettings(dirichlet_fraction=0.25, temperature=1.0)
DEFAULT_RECIPES = "sample:15,batched:4:32,distinct:4:32,distinct-plain:4:32,distinct:8:16"


def run_recipe(env, items: list, recipe: str, seed: int) -> tuple[Decoded, int]:
    """``(decoded, decodes per item)`` for one recipe string."""
    kind, *numbers = recipe.split(":")
    n = int(numbers[0])
    if kind == "sample":
        return decode(env, [i for i in items for _ in range(n)], "sample", seed=seed), n
    simulations = int(numbers[1])
    if kind == "batched":
        repeated = [i for i in items for _ in range(n)]
        return decode(env, repeated, "mcts", budget=simulations, seed=seed, settings=EXPLORING), n
    if kind in ("distinct", "distinct-plain"):
        settings = EXPLORING if kind == "distinct" else TreeSearchSettings()
        decoded = decode_distinct(
            env, items, "mcts", searches=n, budget=simulations, seed=seed, settings=settings
        )
        return decoded, n
    raise ValueError(f"unknown recipe {recipe!r}; kinds: sample, batched, distinct, distinct-plain")


def solution_counts(decoded: Decoded, items: list, per_item: int) -> np.ndarray:
    """Distinct verified completions per item, from rewards and every solving tree."""
    counts = []
    for i in range(len(items)):
        found = set()
        for row in range(i * per_item, (i + 1) * per_item):
            if decoded.rewards[row] > 0:
                found.add(tuple(decoded.ids[row]))
            found.update(decoded.solutions[row] if decoded.solutions else ())
        counts.append(len(found))
    return np.array(counts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run-dir", default="runs/countdown_pretrain_seed0")
    parser.add_argument("--prompts", type=int, default=200, help="training puzzles (0 = all)")
    parser.add_argument("--recipes", default=DEFAULT_RECIPES)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    loaded = load_lm(args.run_dir)
    split = task_from_spec(loaded.task)
    items = split.train[: args.prompts] if args.prompts > 0 else split.train
    env = build_env(loaded.model, loaded.tokenizer, split.task, candidates=8, max_new_tokens=40)
    print(f"{len(items)} training puzzles, model {args.run_dir}")
    print(
        f"{'recipe':<20} {'solved any':>10} {'solutions/solved':>16} {'solutions/puzzle':>16} "
        f"{'passes/puzzle':>13} {'seconds':>8}"
    )
    for recipe in args.recipes.split(","):
        began = time.time()
        decoded, per_item = run_recipe(env, items, recipe, args.seed)
        counts = solution_counts(decoded, items, per_item)
        solved = counts > 0
        print(
            f"{recipe:<20} {solved.mean():>10.3f} {counts[solved].mean():>16.2f} "
            f"{counts.mean():>16.2f} {decoded.forward_passes / len(items):>13.1f} "
            f"{time.time() - began:>8.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
