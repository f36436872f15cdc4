"""The one-pass pUCT rule for the tree min-max transform (EfficientZero / LightZero mode,
`search.action_selection.puct_action_tree_min_max`) chooses what the general rule does."""

import numba
import numpy as np
import pytest

import search
from search import kernels
from search.action_selection import puct_action, puct_action_tree_min_max
from search.qtransforms import parent_mean_qvalue, transformed_qvalues
from tests.search.problems import make_problem, root_output, table_recurrent_fn


@numba.njit
def _both_rules_on_every_node(tree, params, parent_q, scratch):
    """``[B, N + 1, 2]``: each used node's action by the general and the one-pass rule."""
    chosen = np.full((*tree.node_visits.shape, 2), -1, np.int64)
    counts, stats, legal = tree.children_counts, tree.children_stats, tree.children_legal
    for b in range(tree.node_visits.shape[0]):
        for node in range(tree.node_visits.shape[1]):
            if tree.node_visits[b, node] == 0:
                continue
            kernels.write_prior_probs(stats, legal, b, node)  # leaves have none yet
            mean_q = parent_mean_qvalue(stats, counts, b, node, node == 0, parent_q)
            transformed_qvalues(
                stats,
                counts,
                b,
                node,
                np.float64(tree.node_values[b, node]),
                np.float64(tree.raw_values[b, node]),
                params,
                mean_q,
                tree.tree_min_max,
                scratch,
            )
            visits = tree.node_visits[b, node]
            chosen[b, node, 0] = puct_action(counts, stats, legal, b, node, visits, params, scratch)
            chosen[b, node, 1] = puct_action_tree_min_max(
                counts,
                stats,
                legal,
                b,
                node,
                visits,
                params,
                mean_q,
                tree.tree_min_max[b, 0],
                tree.tree_min_max[b, 1],
                scratch.shape[0],
            )
    return chosen


@pytest.mark.parametrize("unvisited", ["parent_mean", "min"])
@pytest.mark.parametrize("flat_priors", [False, True], ids=["priors", "tied_priors"])
@pytest.mark.parametrize("seed", range(4))
def test_the_one_pass_rule_matches_the_general_one(unvisited, flat_priors, seed):
    problem = make_problem(seed, 6, 7, legal_fraction=0.7)
    if flat_priors:  # every prior tied: the lowest index must win, as in the general scan
        problem = problem._replace(prior_logits=np.zeros_like(problem.prior_logits))
    qtransform = search.qtransform_tree_min_max(floor=0.05, unvisited=unvisited)
    out = search.muzero_policy(
        root_output(problem),
        table_recurrent_fn(problem),
        num_simulations=40,
        seed=seed,
        dirichlet_fraction=0.0,
        qtransform=qtransform,
    )
    params = kernels.kernel_params(
        policy=kernels.POLICY_MUZERO, qtransform=qtransform, max_depth=40, value_prefix_horizon=0
    )
    scratch = np.empty(7)
    for parent_q in (0.0, 0.3):
        chosen = _both_rules_on_every_node(out.tree, params, parent_q, scratch)
        assert (chosen[..., 0] >= 0).sum() > 20
        np.testing.assert_array_equal(chosen[..., 0], chosen[..., 1])
    # before any backup (empty min-max statistics) both read the priors only
    empty = out.tree._replace(tree_min_max=np.tile([np.inf, -np.inf], (6, 1)))
    chosen = _both_rules_on_every_node(empty, params, 0.0, scratch)
    np.testing.assert_array_equal(chosen[..., 0], chosen[..., 1])
