"""Parity with mctx itself on random table MDPs, where jax and mctx are installed (the ``peers``
extra, `make bench-mctx`); skipped otherwise. The golden records pin 44 fixed cases; this runs
new ones: one- and two-player, with and without invalid root actions, PUCT and Gumbel with the
noise off (mctx draws its noise from its own PRNG)."""

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("mctx")

import search
from benchmarks.search_vs_mctx import MctxSearch

CASES = [
    # seed, B, A, N, two-player, invalid actions
    (0, 8, 4, 16, False, False),
    (1, 8, 9, 64, True, True),
    (2, 4, 18, 100, False, True),
    (3, 16, 6, 32, True, False),
]


def _mdp(seed, num_actions, two_player, num_states=64):
    rng = np.random.default_rng(seed)
    tables = dict(
        next_state=rng.integers(0, num_states, (num_states, num_actions)).astype(np.int32),
        reward=rng.normal(0, 0.3, (num_states, num_actions)).astype(np.float32),
        discount=np.full((num_states, num_actions), -1.0 if two_player else 0.997, np.float32),
        prior_logits=rng.normal(0, 1, (num_states, num_actions)).astype(np.float32),
        value=(
            rng.uniform(-1, 1, num_states) if two_player else rng.normal(0, 1, num_states)
        ).astype(np.float32),
    )
    return tables, rng


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
@pytest.mark.parametrize("case", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_same_trees_as_live_mctx(case, policy):
    seed, batch_size, num_actions, num_simulations, two_player, with_invalid = case
    tables, rng = _mdp(seed, num_actions, two_player)
    states = rng.integers(0, tables["value"].shape[0], batch_size).astype(np.int32)
    invalid = None
    if with_invalid:
        invalid = rng.random((batch_size, num_actions)) < 0.4
        invalid[:, rng.integers(num_actions)] = False  # every root keeps a legal action
    theirs = MctxSearch(SimpleNamespace(**tables)).search(
        policy, states, num_simulations, seed=0, noise=False, invalid_actions=invalid
    )

    model = search.tabular_model(**tables)
    root = search.RootOutput(tables["prior_logits"][states], tables["value"][states], states)
    legal = None if invalid is None else ~invalid
    if policy == "gumbel":
        ours = search.gumbel_muzero_policy(
            root, model, num_simulations=num_simulations, legal_mask=legal, gumbel_scale=0.0
        )
        np.testing.assert_array_equal(ours.action, np.asarray(theirs.action))
    else:
        ours = search.muzero_policy(
            root, model, num_simulations=num_simulations, legal_mask=legal, dirichlet_fraction=0.0
        )
    summary = theirs.search_tree.summary()
    np.testing.assert_array_equal(ours.visit_counts, np.asarray(summary.visit_counts))
    np.testing.assert_array_equal(ours.tree.parents, np.asarray(theirs.search_tree.parents))
    np.testing.assert_allclose(
        ours.action_weights, np.asarray(theirs.action_weights), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(ours.root_value, np.asarray(summary.value), rtol=1e-5, atol=1e-5)
