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

from search.tree import PRIOR_LOGITS, PRIOR_PROBS, VISITS


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
