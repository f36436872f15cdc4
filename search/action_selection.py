"""Action selection at one node: PUCT (MuZero) and Gumbel MuZero's root and interior rules.

Each function reads one node of tree ``b`` and returns the chosen action. Illegal actions are
never chosen. Ties go to the lowest action index (mctx adds 1e-7 uniform noise instead; the
golden records are filtered so that this never matters).
"""

from __future__ import annotations

import numba
import numpy as np

from search.qtransforms import transformed_qvalues


@numba.njit(cache=True)
def puct_action(tree, b, node, params, parent_mean_q, scratch):
    """MuZero's pUCT rule (Schrittwieser et al. 2020, eq. 2) with mctx's parent count
    ``N(s) = node_visits`` (1 + sum of child visits)."""
    transformed_qvalues(tree, b, node, params.qtransform, parent_mean_q, scratch)
    node_visits = np.float64(tree.node_visits[b, node])
    pb_c = params.pb_c_init + np.log((node_visits + params.pb_c_base + 1.0) / params.pb_c_base)
    exploration = np.sqrt(node_visits) * pb_c
    best_action = -1
    best_score = -np.inf
    for a in range(scratch.shape[0]):
        if not tree.children_legal[b, node, a]:
            continue
        prior = np.float64(tree.children_prior_probs[b, node, a])
        score = scratch[a] + exploration * prior / (tree.children_visits[b, node, a] + 1.0)
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    return best_action


@numba.njit(cache=True)
def gumbel_root_action(tree, b, params, considered_visit, scratch):
    """Sequential halving at the root: among the actions whose visit count equals
    ``considered_visit``, the one with the largest ``gumbel + logits + sigma(completed Q)``."""
    transformed_qvalues(tree, b, 0, params.qtransform, 0.0, scratch)
    return considered_argmax(tree, b, considered_visit, scratch)


@numba.njit(cache=True)
def considered_argmax(tree, b, considered_visit, completed_qvalues):
    """mctx's ``score_considered`` then a masked argmax over the root's legal actions."""
    num_actions = completed_qvalues.shape[0]
    max_logit = -np.inf
    for a in range(num_actions):
        max_logit = max(max_logit, np.float64(tree.children_prior_logits[b, 0, a]))
    best_action = -1
    best_score = -np.inf
    for a in range(num_actions):
        if not tree.children_legal[b, 0, a] or tree.children_visits[b, 0, a] != considered_visit:
            continue
        logit = np.float64(tree.children_prior_logits[b, 0, a]) - max_logit
        score = max(-1e9, tree.root_gumbel[b, a] + logit + completed_qvalues[a])
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    if best_action < 0:  # unreachable for a valid schedule; stay legal regardless
        for a in range(num_actions):
            if tree.children_legal[b, 0, a]:
                return a
    return best_action


@numba.njit(cache=True)
def gumbel_interior_action(tree, b, node, params, scratch):
    """Deterministic interior selection (Gumbel MuZero eq. 14):
    ``argmax(pi'(a) - N(a) / (1 + sum N))`` with ``pi' = softmax(logits + sigma(completed Q))``."""
    transformed_qvalues(tree, b, node, params.qtransform, 0.0, scratch)
    num_actions = scratch.shape[0]
    max_logit = -np.inf
    sum_visits = 0
    for a in range(num_actions):
        scratch[a] += tree.children_prior_logits[b, node, a]
        if tree.children_legal[b, node, a]:
            max_logit = max(max_logit, scratch[a])
        sum_visits += tree.children_visits[b, node, a]
    normaliser = 0.0
    for a in range(num_actions):
        if tree.children_legal[b, node, a]:
            scratch[a] = np.exp(scratch[a] - max_logit)
            normaliser += scratch[a]
    inverse_visits = 1.0 / (1.0 + sum_visits)
    best_action = -1
    best_score = -np.inf
    for a in range(num_actions):
        if not tree.children_legal[b, node, a]:
            continue
        score = scratch[a] / normaliser - tree.children_visits[b, node, a] * inverse_visits
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    return best_action
