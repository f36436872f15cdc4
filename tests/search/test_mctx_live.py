"""Parity with mctx itself on random table MDPs, where jax and mctx are installed (the ``peers``
extra, `make bench-mctx`); skipped otherwise. The golden records pin 44 fixed cases; this runs
new ones: one- and two-player, with and without invalid root actions, PUCT and Gumbel with the
noise off (mctx draws its noise from its own PRNG)."""

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("mctx")

from benchmarks.models import TableModel
from benchmarks.search_vs_mctx import MctxSearch, our_search

CASES = [
    # seed, B, A, N, two-player, invalid actions
    (0, 8, 4, 16, False, False),
    (1, 8, 9, 64, True, True),
    (2, 4, 18, 100, False, True),
    (3, 16, 6, 32, True, False),
]


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
@pytest.mark.parametrize("case", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_same_trees_as_live_mctx(case, policy):
    seed, batch_size, num_actions, num_simulations, two_player, with_invalid = case
    table = TableModel(num_actions, num_states=64, seed=seed, two_player=two_player)
    rng = np.random.default_rng(seed)
    states = rng.integers(0, table.num_states, batch_size).astype(np.int32)
    invalid = None
    if with_invalid:
        invalid = rng.random((batch_size, num_actions)) < 0.4
        invalid[:, rng.integers(num_actions)] = False  # every root keeps a legal action
    theirs = MctxSearch(table).search(
        policy, states, num_simulations, seed=0, noise=False, invalid_actions=invalid
    )
    legal = None if invalid is None else ~invalid
    ours = our_search(
        policy, table.tabular(), states, num_simulations, seed=0, noise=False, legal_mask=legal
    )
    if policy == "gumbel":
        np.testing.assert_array_equal(ours.action, np.asarray(theirs.action))
    summary = theirs.search_tree.summary()
    np.testing.assert_array_equal(ours.visit_counts, np.asarray(summary.visit_counts))
    np.testing.assert_array_equal(ours.tree.parents, np.asarray(theirs.search_tree.parents))
    np.testing.assert_allclose(
        ours.action_weights, np.asarray(theirs.action_weights), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(ours.root_value, np.asarray(summary.value), rtol=1e-5, atol=1e-5)
