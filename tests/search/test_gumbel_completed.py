"""The specialised Gumbel rules (`search.gumbel_completed`) choose what the general ones do."""

import numba
import numpy as np
import pytest

import search
from search import kernels
from search.action_selection import considered_argmax, gumbel_interior_action
from search.gumbel_completed import gumbel_interior_action_completed, gumbel_root_action_completed
from search.qtransforms import transformed_qvalues
from tests.search.problems import make_problem, root_output, table_recurrent_fn


@numba.njit
def _both_rules_on_every_node(tree, params, scratch):
    """``[B, N + 1, 2]``: the interior action of each used node by the general and the fast rule."""
    chosen = np.full((*tree.node_visits.shape, 2), -1, np.int64)
    counts, stats, legal = tree.children_counts, tree.children_stats, tree.children_legal
    for b in range(tree.node_visits.shape[0]):
        for node in range(tree.node_visits.shape[1]):
            if tree.node_visits[b, node] == 0:
                continue
            kernels.write_prior_probs(stats, legal, b, node)  # leaves have none yet
            raw_value = np.float64(tree.raw_values[b, node])
            node_value = np.float64(tree.node_values[b, node])
            transformed_qvalues(
                stats,
                counts,
                b,
                node,
                node_value,
                raw_value,
                params,
                0.0,
                tree.tree_min_max,
                scratch,
            )
            chosen[b, node, 0] = gumbel_interior_action(counts, stats, legal, b, node, scratch)
            chosen[b, node, 1] = gumbel_interior_action_completed(
                counts, stats, legal, b, node, raw_value, params, scratch
            )
    return chosen


@numba.njit
def _both_root_rules(tree, params, considered_visit, scratch):
    chosen = np.empty((tree.node_visits.shape[0], 2), np.int64)
    counts, stats, legal = tree.children_counts, tree.children_stats, tree.children_legal
    for b in range(tree.node_visits.shape[0]):
        raw_value = np.float64(tree.raw_values[b, 0])
        node_value = np.float64(tree.node_values[b, 0])
        transformed_qvalues(
            stats, counts, b, 0, node_value, raw_value, params, 0.0, tree.tree_min_max, scratch
        )
        chosen[b, 0] = considered_argmax(
            counts, stats, legal, tree.root_gumbel, b, considered_visit, scratch
        )
        chosen[b, 1] = gumbel_root_action_completed(
            counts, stats, legal, tree.root_gumbel, b, raw_value, params, considered_visit, scratch
        )
    return chosen


QTRANSFORMS = [
    search.qtransform_completed_by_mix_value(),
    search.qtransform_completed_by_mix_value(use_mixed_value=False),
    search.qtransform_completed_by_mix_value(
        rescale_values=False, value_scale=1.0, maxvisit_init=10.0
    ),
]


@pytest.mark.parametrize("qtransform", QTRANSFORMS, ids=["default", "raw_value", "unscaled"])
@pytest.mark.parametrize("seed", range(6))
def test_fast_gumbel_rules_match_the_general_ones(qtransform, seed):
    problem = make_problem(seed, 6, 7, legal_fraction=0.7)
    out = search.gumbel_muzero_policy(
        root_output(problem),
        table_recurrent_fn(problem),
        num_simulations=40,
        seed=seed,
        qtransform=qtransform,
    )
    params = kernels.kernel_params(
        policy=kernels.POLICY_GUMBEL, qtransform=qtransform, max_depth=40, value_prefix_horizon=0
    )
    scratch = np.empty(7)
    interior = _both_rules_on_every_node(out.tree, params, scratch)
    np.testing.assert_array_equal(interior[..., 0], interior[..., 1])
    for considered_visit in range(4):
        root = _both_root_rules(out.tree, params, considered_visit, scratch)
        np.testing.assert_array_equal(root[:, 0], root[:, 1])
