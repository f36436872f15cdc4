"""Where search decoding's forward passes go, on Countdown-24: MCTS against Gumbel MuZero.

Search decoding runs one search per generated token, from the node played last. A search pays a
forward pass only for a prefix no earlier search has read (the text environment caches every
node), so what one move's search leaves below the child it plays is free for the next move's.
Per search this prints the passes paid for new prefixes (against N, the simulations), the depth
of its tree, and the nodes the next search finds already read: the played child's subtree.

    python -m benchmarks.countdown_tree_reuse --run-dir runs/cd_pre30 --prompts 64

Extra arguments are Hydra overrides of ``experiment=countdown_pretrain``, used only when the run
directory holds no model yet (`benchmarks.countdown_decoding.pretrained` trains one).
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass, field

import numpy as np

import search
from benchmarks.countdown_decoding import pretrained
from llm_bridge import decoding
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.train_text import build_env


def subtree_size(tree: search.Tree, row: int, node: int) -> int:
    """Nodes in the subtree of ``node`` of tree ``row``, ``node`` included."""
    size, stack = 0, [node]
    while stack:
        index = stack.pop()
        size += 1
        stack.extend(int(child) for child in tree.children_index[row, index] if child >= 0)
    return size


@dataclass
class Searches:
    """Totals over the searches of one decoding run, one entry per root searched."""

    new_passes: int = 0
    depths: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)  # nodes below the played child, itself included

    def add(self, output, passes: int) -> None:
        self.new_passes += passes
        tree = output.tree
        used = tree.parents != search.tree.NO_PARENT
        self.depths.extend(np.where(used, tree.node_depth, 0).max(axis=1).tolist())
        for row, action in enumerate(output.action.tolist()):
            child = int(tree.children_index[row, search.ROOT_INDEX, action])
            self.kept.append(subtree_size(tree, row, child) if child >= 0 else 0)


@contextlib.contextmanager
def traced_searches():
    """Records every search that `llm_bridge.decoding` runs inside the block."""
    searches = Searches()
    untraced = decoding.search_roots

    def search_roots(env, roots, settings, keys):
        before = env.adapter.forward_passes
        output = untraced(env, roots, settings, keys)
        searches.add(output, env.adapter.forward_passes - before)
        return output

    decoding.search_roots = search_roots
    try:
        yield searches
    finally:
        decoding.search_roots = untraced


def parse_ints(text: str) -> list[int]:
    """``"8,16"`` -> ``[8, 16]``: positive integers (simulations, root breadths)."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers >= 1, like 8,16; got {text!r}"
        )
    return values


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run-dir", default="runs/countdown_pretrain_seed0")
    parser.add_argument("--prompts", type=int, default=64, help="test prompts (0 = all 262)")
    parser.add_argument("--budgets", type=parse_ints, default=[8, 16, 32], help="simulations N")
    parser.add_argument(
        "--considered", type=parse_ints, default=[2, 8], help="Gumbel's root breadths m"
    )
    args, overrides = parser.parse_known_args(argv)
    loaded = pretrained(args.run_dir, overrides)
    split = task_from_spec(loaded.task)
    items = split.test[: args.prompts] if args.prompts > 0 else split.test
    env = build_env(loaded.model, loaded.tokenizer, split.task, candidates=8, max_new_tokens=40)
    variants = [("mcts", "mcts", None)] + [
        (f"gumbel m={m}", "gumbel", decoding.TreeSearchSettings(max_num_considered_actions=m))
        for m in args.considered
    ]
    print(f"{len(items)} test prompts; per search: passes for new prefixes, tree")
    print("depth, and nodes below the played child (the next search reads them for free)\n")
    header = (
        f"{'method':<12} {'N':>3} {'accuracy':>8} {'passes/prompt':>13} {'searches/prompt':>15} "
        f"{'new passes/search':>17} {'depth':>5} {'kept nodes':>10} {'kept / N':>8}"
    )
    print(header)
    print("-" * len(header))
    for label, method, settings in variants:
        for budget in args.budgets:
            with traced_searches() as searches:
                decoded = decoding.decode(
                    env, items, method, budget=budget, seed=0, settings=settings
                )
            count = max(len(searches.kept), 1)
            kept = float(np.mean(searches.kept)) if searches.kept else 0.0
            print(
                f"{label:<12} {budget:>3} {decoded.accuracy:>8.3f} "
                f"{decoded.forward_passes / len(items):>13.1f} {count / len(items):>15.1f} "
                f"{searches.new_passes / count:>17.2f} {np.mean(searches.depths or [0]):>5.1f} "
                f"{kept:>10.1f} {kept / budget:>8.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
