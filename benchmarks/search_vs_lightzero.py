"""Our search against LightZero's C++ tree, one core against one core, in the same process.

LightZero's MuZero tree (``ctree_muzero``, C++ behind Cython) is driven by a copy of
``MuZeroMCTSCtree.search``'s per-simulation Python loop, as a user of it pays for it, with the
table MDP's numpy lookups in place of the network (the torch conversions and the inverse scalar
transform around their network are left out: a table has neither). Ours runs in EfficientZero
mode (``qtransform_tree_min_max``: tree-wide min-max Q, unvisited children at the parent mean),
timed twice: ``ours`` with the table inside the kernels (the tree alone, as in
`benchmarks.search_vs_mctx`) and ``ours fn`` with the same Python model call per simulation as
LightZero's loop. The process is pinned to one CPU (``--cpu``), numba runs one thread and the
BLAS/OpenMP pools are set to one; the three take turns in blocks, so drift falls on all of them.

Settings matched, single player (``to_play`` -1, so no sign conventions differ): pUCT
``pb_c_base`` 19652 and ``pb_c_init`` 1.25, the table's discount 0.997, min-max range floor
0.01 (their ``value_delta_max``), no root noise (``prepare_no_noise``; Dirichlet fraction 0),
root reward 0. Even so the two cannot build the same trees, because LightZero's tree
(``cnode.cpp``) differs on purpose from ours (see `search.qtransform_tree_min_max`):

* its pUCT parent count is the sum of child visits, so at each node's first selection (the
  root's included) the prior term is ``sqrt(0) = 0`` and every child ties; the tie is broken by
  ``rand()``, which ``batch_traverse`` reseeds from the clock's microseconds on every call:
  LightZero does not build the same tree twice (ours, ``1 + sum N``, follows the prior);
* its min-max statistics also take ``gamma * V(root)`` at every backup;
* it breaks near-ties within 1e-6 at random, where ours takes the lowest action.

So the check, with the noise off, reports ``differ``, the roots whose visit counts differ
between ours and LightZero, next to ``lz~lz``, those that differ between two LightZero runs;
``dist``, the mean L1 distance between our and LightZero's root visit counts over that between
LightZero's two runs (about 1: ours is as close to LightZero as LightZero is to itself; mctx's
default transform gives several times more); and the mean depth of the new nodes, which says
whether the two do the same work per simulation. Our two seams must build the same trees (the
benchmark exits otherwise).

LightZero's EfficientZero tree is left out: it has the same random first selection, so no tree
comparison could confirm that its value-prefix reset (``search_len % lstm_horizon_len == 0``,
computed in Python and applied to the new node) is our ``value_prefix_horizon``; and feeding it
a table MDP's per-step rewards needs running path sums, glue that no user of it pays.

Needs LightZero's prebuilt trees (CPython 3.11 wheels; the tree modules need only numpy, and
load them by file path, without LightZero's torch and DI-engine imports):
``pip install --no-deps lightzero==0.2.0``, or ``--lightzero-dir`` / ``LIGHTZERO_DIR`` naming
a folder that holds ``lzero/`` (an unpacked wheel).

    python -m benchmarks.search_vs_lightzero [--points 16x50,256x50] [--budget 2] [--cpu 1]
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # before numpy loads its BLAS/OpenMP pools: one core, one thread
    os.environ.update(
        dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"), "1")
    )

import argparse
import importlib.machinery
import importlib.metadata
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import numba
import numpy as np

import search
from benchmarks.models import TableModel
from benchmarks.search_vs_mctx import (  # the peer table and the timing blocks
    NUM_ACTIONS,
    parse_points,
    pin_to_one_core,
    time_interleaved,
)

# LightZero's MuZeroMCTSCtree defaults, which are also ours.
PB_C_BASE = 19652
PB_C_INIT = 1.25
VALUE_DELTA_MAX = 0.01  # their min-max range floor, our `qtransform_tree_min_max(floor=)`
SINGLE_PLAYER = -1  # LightZero's to_play for one-player games
EZ_QTRANSFORM = search.qtransform_tree_min_max(floor=VALUE_DELTA_MAX)
TREE_MODULE = "lzero.mcts.ctree.ctree_muzero.mz_tree"
INSTALL_HINT = (
    "`pip install --no-deps lightzero==0.2.0` (prebuilt for CPython 3.11), or pass "
    "--lightzero-dir / set LIGHTZERO_DIR to a folder holding lzero/ (an unpacked wheel)"
)


class LightZeroTree(NamedTuple):
    """LightZero's MuZero tree module, loaded by file path, with its version and file."""

    module: ModuleType
    version: str
    path: Path


def find_lightzero_tree(lightzero_dir: str | None = None) -> Path | None:
    """The MuZero tree extension for this interpreter, or None: under ``lightzero_dir`` (or
    ``$LIGHTZERO_DIR``) if given, else in an installed ``lightzero``."""
    lightzero_dir = lightzero_dir or os.environ.get("LIGHTZERO_DIR")
    if lightzero_dir:
        package = Path(lightzero_dir) / "lzero"
    else:
        # find_spec on a top-level name runs nothing: lzero's __init__ imports torch, DI-engine.
        spec = importlib.util.find_spec("lzero")
        if spec is None or not spec.submodule_search_locations:
            return None
        package = Path(next(iter(spec.submodule_search_locations)))
    folder = package.joinpath(*TREE_MODULE.split(".")[1:-1])
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"mz_tree{suffix}"
        if path.is_file():
            return path
    return None


def load_lightzero_tree(lightzero_dir: str | None = None) -> LightZeroTree:
    """The tree module from `find_lightzero_tree`; exits with how to get it when missing."""
    path = find_lightzero_tree(lightzero_dir)
    if path is None:
        where = lightzero_dir or os.environ.get("LIGHTZERO_DIR") or "the installed packages"
        raise SystemExit(
            f"LightZero's C++ tree not found in {where}; install it with {INSTALL_HINT}"
        )
    spec = importlib.util.spec_from_file_location(TREE_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    site = path.parents[len(TREE_MODULE.split(".")) - 1]  # the folder that holds lzero/
    versions = [
        dist.version
        for dist in importlib.metadata.distributions(path=[str(site)])
        if (dist.metadata["Name"] or "").lower() == "lightzero"
    ]
    return LightZeroTree(module, versions[0] if versions else "(version unknown)", path)


def single_player_discount(model: TableModel) -> float:
    """The table's one discount: LightZero takes a scalar ``discount_factor``."""
    discount = float(model.discount.flat[0])
    if not np.all(model.discount == discount) or discount <= 0:
        raise ValueError(
            "LightZero's tree takes one positive discount; the table's discounts span "
            f"{model.discount.min()}..{model.discount.max()} (use a single-player TableModel)"
        )
    return discount


def lightzero_search(tree, model: TableModel, states, num_simulations, depths=None) -> np.ndarray:
    """Root visit counts ``[B, A]`` from LightZero's tree, noise off: the policy's root set-up
    (``Roots``, ``prepare_no_noise``) and ``MuZeroMCTSCtree.search``'s loop, with ``model``'s
    lookups as the network. ``depths``, a list, receives each simulation's new-node depths."""
    batch_size, num_actions = len(states), model.prior_logits.shape[1]
    legal_actions = [list(range(num_actions)) for _ in range(batch_size)]
    to_play_batch = [SINGLE_PLAYER] * batch_size
    roots = tree.Roots(batch_size, legal_actions)
    reward_roots = [0.0] * batch_size
    roots.prepare_no_noise(reward_roots, model.prior_logits[states].tolist(), to_play_batch)
    discount_factor = single_player_discount(model)
    min_max_stats_lst = tree.MinMaxStatsList(batch_size)
    min_max_stats_lst.set_delta(VALUE_DELTA_MAX)
    latent_state_batch_in_search_path = [states]
    for simulation_index in range(num_simulations):
        latent_states = []
        results = tree.ResultsWrapper(num=batch_size)
        index_in_search_path, index_in_batch, last_actions, virtual_to_play_batch = (
            tree.batch_traverse(
                roots,
                PB_C_BASE,
                PB_C_INIT,
                discount_factor,
                min_max_stats_lst,
                results,
                to_play_batch,
            )
        )
        if depths is not None:
            depths.extend(results.get_search_len())
        for ix, iy in zip(index_in_search_path, index_in_batch, strict=True):
            latent_states.append(latent_state_batch_in_search_path[ix][iy])
        latent_states = np.asarray(latent_states)
        last_actions = np.asarray(last_actions)
        step, next_latent_states = model(latent_states, last_actions)
        latent_state_batch_in_search_path.append(next_latent_states)
        tree.batch_backpropagate(
            simulation_index + 1,
            discount_factor,
            step.reward.reshape(-1).tolist(),
            step.value.reshape(-1).tolist(),
            step.prior_logits.tolist(),
            min_max_stats_lst,
            results,
            virtual_to_play_batch,
        )
    return np.asarray(roots.get_distributions())


def our_search(model: TableModel, recurrent_fn, states, num_simulations, seed=0, qtransform=None):
    """Our EfficientZero-mode search, noise off; ``recurrent_fn`` is ``model`` itself (a Python
    call per simulation) or ``model.tabular()`` (looked up inside the kernels)."""
    root = search.RootOutput(model.prior_logits[states], model.value[states], states)
    return search.muzero_policy(
        root,
        recurrent_fn,
        num_simulations=num_simulations,
        seed=seed,
        dirichlet_fraction=0.0,
        pb_c_init=PB_C_INIT,
        pb_c_base=float(PB_C_BASE),
        qtransform=EZ_QTRANSFORM if qtransform is None else qtransform,
    )


class TreeComparison(NamedTuple):
    """Ours against LightZero on the same roots, noise off (see the module docstring).

    differ: roots whose visit counts differ, ours against LightZero's first run.
    lightzero_differ: roots whose visit counts differ between LightZero's two runs.
    distance_ratio: mean L1 distance of root visit counts, ours to LightZero's runs, over that
        between its two runs (nan when those agree everywhere).
    lightzero_depth, our_depth: mean depth of the nodes each search created.
    seams_agree: ours built the same trees with the table in the kernels and as a Python model.
    """

    differ: int
    lightzero_differ: int
    distance_ratio: float
    lightzero_depth: float
    our_depth: float
    seams_agree: bool


def compare_trees(tree, model, tabular, states, num_simulations, qtransform=None):
    """A `TreeComparison` of our search (``qtransform``, default EfficientZero mode) and two
    runs of LightZero's on the root ``states`` ``[B]``."""
    depths = []
    first = lightzero_search(tree, model, states, num_simulations, depths)
    second = lightzero_search(tree, model, states, num_simulations)
    ours = our_search(model, tabular, states, num_simulations, qtransform=qtransform)
    ours_fn = our_search(model, model, states, num_simulations, qtransform=qtransform)
    visits = ours.visit_counts

    def distance(a, b):
        return float(np.abs(a - b).sum(axis=1).mean())

    between_runs = distance(first, second)
    to_ours = (distance(visits, first) + distance(visits, second)) / 2
    return TreeComparison(
        differ=int((visits != first).any(axis=1).sum()),
        lightzero_differ=int((first != second).any(axis=1).sum()),
        distance_ratio=to_ours / between_runs if between_runs > 0 else float("nan"),
        lightzero_depth=float(np.mean(depths)),
        our_depth=float(search.tree_depths(ours.tree).mean()),
        seams_agree=bool(np.array_equal(visits, ours_fn.visit_counts)),
    )


def time_point(tree, model, tabular, states, num_simulations, budget_s):
    """Median seconds per search: LightZero, ours (table in the kernels), ours (Python model
    call per simulation). They take turns in blocks, each block starting with untimed
    searches, so none is timed with caches another left cold."""
    runners = {
        "lightzero": lambda seed: lightzero_search(tree, model, states, num_simulations),
        "ours": lambda seed: our_search(model, tabular, states, num_simulations, seed),
        "ours_fn": lambda seed: our_search(model, model, states, num_simulations, seed),
    }
    return time_interleaved(runners, budget_s)


def print_row(batch_size, num_simulations, comparison: TreeComparison, medians, rounds) -> None:
    theirs, ours, ours_fn = (1e3 * medians[k] for k in ("lightzero", "ours", "ours_fn"))
    depths = f"{comparison.lightzero_depth:.2f}/{comparison.our_depth:.2f}"
    print(
        f"{'puct':6s} {batch_size:5d} {num_simulations:4d} {NUM_ACTIONS:3d} "
        f"{f'{comparison.differ}/{batch_size}':>9s} "
        f"{f'{comparison.lightzero_differ}/{batch_size}':>9s} {comparison.distance_ratio:5.2f} "
        f"{depths:>13s} {theirs:12.2f} {ours:8.3f} {theirs / ours:6.1f} "
        f"{ours_fn:10.3f} {theirs / ours_fn:6.1f} {rounds:6d}",
        flush=True,
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", help="comma-separated BxN (default: the issue's four)")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of repeats per point")
    parser.add_argument("--cpu", type=int, help="the CPU to run on (default: the last one)")
    parser.add_argument("--lightzero-dir", help="a folder holding lzero/ (default: installed)")
    args = parser.parse_args(argv)
    tree = load_lightzero_tree(args.lightzero_dir)
    cpu = pin_to_one_core(args.cpu)
    model = TableModel(NUM_ACTIONS)
    tabular = model.tabular()
    print(f"LightZero {tree.version} MuZero ctree from {tree.path}")
    print(f"one core each: CPU {cpu}, numba threads {numba.get_num_threads()}, noise off")
    header = (
        f"{'policy':6s} {'B':>5s} {'N':>4s} {'A':>3s} {'differ':>9s} {'lz~lz':>9s} {'dist':>5s} "
        f"{'depth lz/ours':>13s} {'lightzero ms':>12s} {'ours ms':>8s} {'x':>6s} "
        f"{'ours fn ms':>10s} {'x':>6s} {'rounds':>6s}"
    )
    print(header)
    print("-" * len(header))
    seams_differ = []
    for batch_size, num_simulations in parse_points(args.points):
        states = model.root(batch_size).embedding
        comparison = compare_trees(tree.module, model, tabular, states, num_simulations)
        if not comparison.seams_agree:
            seams_differ.append(f"B={batch_size} N={num_simulations}")
        medians, rounds = time_point(
            tree.module, model, tabular, states, num_simulations, args.budget
        )
        print_row(batch_size, num_simulations, comparison, medians, rounds)
    print(
        "differ / lz~lz: roots whose visit counts differ, ours vs LightZero / LightZero vs "
        "itself (its ties are random); dist ~1: ours is as close to LightZero as it is to itself"
    )
    if seams_differ:
        raise SystemExit(
            "our search built different trees with the table in the kernels and as a Python "
            f"model at: {', '.join(seams_differ)}"
        )


if __name__ == "__main__":
    main()
