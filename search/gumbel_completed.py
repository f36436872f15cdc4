"""Gumbel MuZero's action selection, specialised to its default Q transform.

`qtransforms.transformed_qvalues` + `action_selection` compute ``sigma(completed Q)`` for every
action and a softmax over all of them at every visit: A exps per interior node. With
``qtransform_completed_by_mix_value`` two facts make most of that unnecessary:

* every unvisited action is completed by the same (mixed) value, so it shares one sigma;
* ``softmax(logits + sigma)(a) = prior(a) * exp(sigma(a)) / Z``, and the prior is cached.

So one pass over the visited children (the node's `ORDER` list) gathers their Q values and the
node's sums, and only the visited actions (plus one shared value for the unvisited ones) need an
exp. Among unvisited actions only the one with the largest prior (interior) or the largest
``gumbel + logit`` (root) can win. The decisions equal the general path's up to float rounding; the tests run both.
"""

from __future__ import annotations

import numba
import numpy as np

from search.qtransforms import completed_qvalue_stats
from search.tree import ORDER, PRIOR_LOGITS, PRIOR_PROBS, VISITS


@numba.njit(cache=True, inline="always")
def gumbel_interior_action_completed(counts, stats, legal, b, node, raw_value, qt, qvalues):
    """``argmax(pi'(a) - N(a) / (1 + sum N))`` (Gumbel MuZero eq. 14) with exps only for the
    visited actions and one for all unvisited ones. Loops over the node's visited children
    (its `ORDER` list), plus one scan of the priors for the best unvisited action."""
    offset, scale, unvisited_q, sum_visits, visited_prior, num_visited = completed_qvalue_stats(
        stats, counts, b, node, raw_value, qt, qvalues
    )
    best_unvisited = _largest_unvisited_prior(counts, stats, legal, b, node)
    # The largest sigma, for a stable exp.
    top = -np.inf
    for k in range(num_visited):
        top = max(top, (qvalues[counts[b, node, ORDER, k]] - offset) * scale)
    unvisited_sigma = (unvisited_q - offset) * scale
    unvisited_weight = 0.0
    unvisited_prior = 0.0
    if best_unvisited >= 0:
        top = max(top, unvisited_sigma)
        unvisited_weight = np.exp(unvisited_sigma - top)
        unvisited_prior = max(0.0, 1.0 - visited_prior)
    normaliser = unvisited_weight * unvisited_prior
    for k in range(num_visited):
        a = counts[b, node, ORDER, k]
        qvalues[a] = np.float64(stats[b, node, PRIOR_PROBS, a]) * np.exp(
            (qvalues[a] - offset) * scale - top
        )
        normaliser += qvalues[a]
    inverse_normaliser = 1.0 / normaliser
    inverse_visits = 1.0 / (1.0 + sum_visits)
    best_action = -1
    best_score = -np.inf
    if best_unvisited >= 0:
        best_action = best_unvisited
        best_score = (
            np.float64(stats[b, node, PRIOR_PROBS, best_unvisited])
            * unvisited_weight
            * inverse_normaliser
        )
    for k in range(num_visited):
        a = counts[b, node, ORDER, k]
        score = qvalues[a] * inverse_normaliser - counts[b, node, VISITS, a] * inverse_visits
        # Ties go to the lowest action index, as in the general rule's scan.
        if best_action < 0 or score > best_score or (score == best_score and a < best_action):
            best_score = score
            best_action = a
    return best_action


@numba.njit(cache=True, inline="always")
def _largest_unvisited_prior(counts, stats, legal, b, node):
    """The legal unvisited action with the largest prior (lowest index on ties), or -1."""
    best_action = -1
    best_prior = -1.0
    for a in range(counts.shape[3]):
        if (
            counts[b, node, VISITS, a] == 0
            and legal[b, node, a]
            and stats[b, node, PRIOR_PROBS, a] > best_prior
        ):
            best_prior = stats[b, node, PRIOR_PROBS, a]
            best_action = a
    return best_action


@numba.njit(cache=True, inline="always")
def gumbel_root_action_completed(
    counts, stats, legal, root_gumbel, b, raw_value, qt, considered_visit, qvalues
):
    """Sequential halving at the root: among legal actions with ``considered_visit`` visits, the
    largest ``gumbel + logit + sigma(completed Q)`` (logits are stored shifted to max 0)."""
    offset, scale, unvisited_q, _, _, _ = completed_qvalue_stats(
        stats, counts, b, 0, raw_value, qt, qvalues
    )
    unvisited_sigma = (unvisited_q - offset) * scale
    best_action = -1
    best_score = -np.inf
    for a in range(qvalues.shape[0]):
        visits = counts[b, 0, VISITS, a]
        if visits != considered_visit or not legal[b, 0, a]:
            continue
        sigma = (qvalues[a] - offset) * scale if visits > 0 else unvisited_sigma
        score = max(-1e9, root_gumbel[b, a] + np.float64(stats[b, 0, PRIOR_LOGITS, a]) + sigma)
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    if best_action < 0:  # unreachable for a valid schedule; stay legal regardless
        for a in range(qvalues.shape[0]):
            if legal[b, 0, a]:
                return a
    return best_action
