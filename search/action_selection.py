"""Action selection at one node: PUCT (MuZero) and Gumbel MuZero's root and interior rules.

Each function reads one node of tree ``b`` from the packed children storage (see
`search.tree`) and returns the chosen action; illegal actions are never chosen. Ties go to the
lowest action index (mctx adds 1e-7 uniform noise instead; its golden records are filtered so
that this never matters). The functions take arrays, not the `Tree`, because numba copies and
reference-counts every field of a record passed to a function, which tripled descent time.
"""

from __future__ import annotations

import numba
import numpy as np

from search.tree import (
    DISCOUNTS,
    ORDER,
    PRIOR_LOGITS,
    PRIOR_PROBS,
    REWARDS,
    UNVISITED,
    VALUES,
    VISITS,
)


@numba.njit(cache=True, inline="always")
def puct_action(counts, stats, legal, b, node, node_visits, params, qvalues):
    """MuZero's pUCT rule (Schrittwieser et al. 2020, eq. 2) with mctx's parent count
    ``N(s) = node_visits`` (1 + sum of child visits); ``qvalues`` holds the transformed Q."""
    visits = np.float64(node_visits)
    pb_c = params.pb_c_init + np.log((visits + params.pb_c_base + 1.0) / params.pb_c_base)
    exploration = np.sqrt(visits) * pb_c
    best_action = -1
    best_score = -np.inf
    for a in range(qvalues.shape[0]):
        if not legal[b, node, a]:
            continue
        prior = np.float64(stats[b, node, PRIOR_PROBS, a])
        score = qvalues[a] + exploration * prior / (counts[b, node, VISITS, a] + 1.0)
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    return best_action


@numba.njit(cache=True, inline="always")
def considered_argmax(counts, stats, legal, root_gumbel, b, considered_visit, completed_qvalues):
    """Sequential halving at the root (mctx's ``score_considered`` + masked argmax): among the
    legal actions whose visit count equals ``considered_visit``, the one with the largest
    ``gumbel + logits + sigma(completed Q)``. The stored logits are already shifted so that
    the largest legal one is 0 (mctx's ``logits - max(logits)``)."""
    num_actions = completed_qvalues.shape[0]
    best_action = -1
    best_score = -np.inf
    for a in range(num_actions):
        if not legal[b, 0, a] or counts[b, 0, VISITS, a] != considered_visit:
            continue
        logit = np.float64(stats[b, 0, PRIOR_LOGITS, a])
        score = max(-1e9, root_gumbel[b, a] + logit + completed_qvalues[a])
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    if best_action < 0:  # unreachable for a valid schedule; stay legal regardless
        for a in range(num_actions):
            if legal[b, 0, a]:
                return a
    return best_action


@numba.njit(cache=True, inline="always")
def gumbel_interior_action(counts, stats, legal, b, node, completed_qvalues):
    """Deterministic interior selection (Gumbel MuZero eq. 14):
    ``argmax(pi'(a) - N(a) / (1 + sum N))`` with ``pi' = softmax(logits + sigma(completed Q))``.
    Overwrites ``completed_qvalues`` with scratch values."""
    scratch = completed_qvalues
    num_actions = scratch.shape[0]
    max_logit = -np.inf
    sum_visits = 0
    for a in range(num_actions):
        scratch[a] += stats[b, node, PRIOR_LOGITS, a]
        if legal[b, node, a]:
            max_logit = max(max_logit, scratch[a])
        sum_visits += counts[b, node, VISITS, a]
    normaliser = 0.0
    for a in range(num_actions):
        if legal[b, node, a]:
            scratch[a] = np.exp(np.float32(scratch[a] - max_logit))  # float32 exp: 3x cheaper
            normaliser += scratch[a]
    inverse_visits = 1.0 / (1.0 + sum_visits)
    best_action = -1
    best_score = -np.inf
    for a in range(num_actions):
        if not legal[b, node, a]:
            continue
        score = scratch[a] / normaliser - counts[b, node, VISITS, a] * inverse_visits
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    return best_action


@numba.njit(cache=True, inline="always")
def puct_action_tree_min_max(
    counts, stats, legal, b, node, node_visits, params, mean_q, low, high, num_actions
):
    """`puct_action` over `qtransform_tree_min_max`'s values (EfficientZero / LightZero mode),
    in one pass instead of three: every unvisited legal action gets the same transformed Q, so
    the scan of the actions needs only their priors, and only the visited children (the node's
    `ORDER` list) need their own Q. Same expressions as the general rule, so the same choice,
    ties to the lowest index."""
    visits = np.float64(node_visits)
    pb_c = params.pb_c_init + np.log((visits + params.pb_c_base + 1.0) / params.pb_c_base)
    exploration = np.sqrt(visits) * pb_c
    known = high >= low  # before any backup there is no value information: Q is 0
    scale = 1.0 / max(high - low, params.floor) if known else 0.0
    unvisited_q = mean_q if params.unvisited_parent_mean else low
    unvisited = min(1.0, max(0.0, (unvisited_q - low) * scale)) if known else 0.0
    best_action = -1
    best_score = -np.inf
    for a in range(num_actions):
        if counts[b, node, VISITS, a] == 0 and legal[b, node, a]:
            score = unvisited + exploration * np.float64(stats[b, node, PRIOR_PROBS, a]) / 1.0
            if score > best_score or best_action < 0:
                best_score = score
                best_action = a
    for k in range(num_actions):
        a = counts[b, node, ORDER, k]
        if a == UNVISITED:
            break
        q = 0.0
        if known:
            q = stats[b, node, REWARDS, a] + stats[b, node, DISCOUNTS, a] * np.float64(
                stats[b, node, VALUES, a]
            )
            q = min(1.0, max(0.0, (q - low) * scale))
        prior = np.float64(stats[b, node, PRIOR_PROBS, a])
        score = q + exploration * prior / (counts[b, node, VISITS, a] + 1.0)
        if best_action < 0 or score > best_score or (score == best_score and a < best_action):
            best_score = score
            best_action = a
    return best_action
