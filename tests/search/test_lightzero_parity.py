"""Our EfficientZero-mode search against LightZero's C++ MuZero tree, where that tree is found
(``pip install --no-deps lightzero==0.2.0``, or ``LIGHTZERO_DIR`` naming an unpacked wheel);
skipped otherwise.

LightZero breaks the tie at each node's first selection with a clock-seeded ``rand()``, so it
never builds the same tree twice and equal visit counts cannot be asked of us (see
`benchmarks.search_vs_lightzero`). The parity checked is the next best: our root visit counts
are as close to LightZero's as LightZero's own runs are to each other, a bar that mctx's
default Q transform fails.
"""

import numpy as np
import pytest

import search
from benchmarks.models import TableModel
from benchmarks.search_vs_lightzero import (
    compare_trees,
    find_lightzero_tree,
    lightzero_search,
    load_lightzero_tree,
)

if find_lightzero_tree() is None:
    pytest.skip("LightZero's C++ tree not found (set LIGHTZERO_DIR)", allow_module_level=True)

NUM_ACTIONS = 5
# Many roots, so that the mean distance between visit counts is steady from run to run.
BATCH_SIZE = 256
NUM_SIMULATIONS = 20
# Ours sits near 1 (LightZero against itself); mctx's default transform well above 2.
MAX_DISTANCE_RATIO = 1.25


@pytest.fixture(scope="module")
def lightzero():
    return load_lightzero_tree().module


@pytest.fixture(scope="module")
def table():
    model = TableModel(NUM_ACTIONS, seed=0)
    return model, model.tabular(), model.root(BATCH_SIZE).embedding


def test_lightzero_spends_every_simulation_below_the_root(lightzero, table):
    model, _, states = table
    visits = lightzero_search(lightzero, model, states[:4], NUM_SIMULATIONS)
    assert visits.shape == (4, NUM_ACTIONS)
    np.testing.assert_array_equal(visits.sum(axis=1), NUM_SIMULATIONS)


def test_lightzero_does_not_build_the_same_tree_twice(lightzero, table):
    """If this fails, LightZero's ties stopped being random: ask for equal visit counts."""
    model, _, states = table
    first = lightzero_search(lightzero, model, states, NUM_SIMULATIONS)
    second = lightzero_search(lightzero, model, states, NUM_SIMULATIONS)
    assert not np.array_equal(first, second)


def test_our_visit_counts_are_as_close_to_lightzero_as_lightzero_is_to_itself(lightzero, table):
    comparison = compare_trees(lightzero, *table, NUM_SIMULATIONS)
    assert comparison.seams_agree
    assert comparison.distance_ratio < MAX_DISTANCE_RATIO, comparison


def test_mctx_default_transform_is_further_from_lightzero(lightzero, table):
    """The bar above has teeth: mctx's Q transform (unvisited children at 0, per-node
    min-max) builds visibly different trees."""
    mctx_transform = search.qtransform_by_parent_and_siblings()
    comparison = compare_trees(lightzero, *table, NUM_SIMULATIONS, qtransform=mctx_transform)
    assert comparison.distance_ratio > MAX_DISTANCE_RATIO, comparison
