"""Gumbel MuZero's action selection, specialised to its default Q transform.

`qtransforms.transformed_qvalues` + `action_selection` compute ``sigma(completed Q)`` for every
action and a softmax over all of them at every visit: A exps per interior node. With
``qtransform_completed_by_mix_value`` two facts make most of that unnecessary:

* every unvisited action is completed by the same (mixed) value, so it shares one sigma;
* ``softmax(logits + sigma)(a) = prior(a) * exp(sigma(a)) / Z``, and the prior is cached.

So one pass over the actions gathers the visited Q values and the node's sums, and only the
visited actions (plus one shared value for the unvisited ones) need an exp. Among unvisited
actions only the one with the largest prior (interior) or the largest ``gumbel + logit`` (root)
can win. The decisions equal the general path's up to float rounding; the tests run both.
"""

from __future__ import annotations

import numba
import numpy as np

from search.qtransforms import child_qvalue
from search.tree import PRIOR_LOGITS, PRIOR_PROBS, VISITS

_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


@numba.njit(cache=True, inline="always")
def completed_sigma(counts, stats, legal, b, node, raw_value, qt, qvalues):
    """One pass over the children of ``node``: writes the Q of visited children to ``qvalues``.

    Returns ``(offset, scale, unvisited_q, unvisited_prior, best_unvisited, sum_visits)`` with
    ``sigma(q) = (q - offset) * scale`` (mctx's completed-by-mix-value transform), the value that
    completes every unvisited action, the prior mass of the unvisited legal actions and the
    unvisited legal action with the largest prior (-1 if none).
    """
    sum_visits = 0
    max_visits = 0
    sum_floored_probs = 0.0
    weighted_q = 0.0
    visited_prior = 0.0
    low = np.inf
    high = -np.inf
    any_unvisited = False
    best_unvisited = -1
    best_prior = -1.0
    for a in range(qvalues.shape[0]):
        visits = counts[b, node, VISITS, a]
        prior = np.float64(stats[b, node, PRIOR_PROBS, a])
        if visits > 0:
            q = child_qvalue(stats, b, node, a)
            qvalues[a] = q
            low = min(low, q)
            high = max(high, q)
            sum_visits += visits
            max_visits = max(max_visits, visits)
            floored = max(_FLOAT32_TINY, prior)
            sum_floored_probs += floored
            weighted_q += floored * q
            visited_prior += prior
        else:
            any_unvisited = True  # illegal actions too: mctx completes (and rescales) all A
            if legal[b, node, a] and prior > best_prior:
                best_prior = prior
                best_unvisited = a
    unvisited_q = raw_value
    if qt.use_mixed_value and sum_visits > 0:  # Gumbel MuZero eq. 33
        unvisited_q = (raw_value + sum_visits * (weighted_q / sum_floored_probs)) / (sum_visits + 1)
    if any_unvisited:
        low = min(low, unvisited_q)
        high = max(high, unvisited_q)
    scale = (qt.maxvisit_init + max_visits) * qt.value_scale
    offset = 0.0
    if qt.rescale_values:
        offset = low
        scale /= max(high - low, qt.epsilon)
    unvisited_prior = max(0.0, 1.0 - visited_prior) if best_unvisited >= 0 else 0.0
    return offset, scale, unvisited_q, unvisited_prior, best_unvisited, sum_visits


@numba.njit(cache=True, inline="always")
def gumbel_interior_action_completed(counts, stats, legal, b, node, raw_value, qt, qvalues):
    """``argmax(pi'(a) - N(a) / (1 + sum N))`` (Gumbel MuZero eq. 14) with exps only for the
    visited actions and one for all unvisited ones."""
    offset, scale, unvisited_q, unvisited_prior, best_unvisited, sum_visits = completed_sigma(
        counts, stats, legal, b, node, raw_value, qt, qvalues
    )
    # Shift by the largest sigma for a stable exp.
    top = (unvisited_q - offset) * scale if best_unvisited >= 0 else -np.inf
    for a in range(qvalues.shape[0]):
        if counts[b, node, VISITS, a] > 0:
            top = max(top, (qvalues[a] - offset) * scale)
    unvisited_weight = 0.0
    if best_unvisited >= 0:
        unvisited_weight = np.exp((unvisited_q - offset) * scale - top)
    normaliser = unvisited_weight * unvisited_prior
    for a in range(qvalues.shape[0]):
        if counts[b, node, VISITS, a] > 0:
            qvalues[a] = np.float64(stats[b, node, PRIOR_PROBS, a]) * np.exp(
                (qvalues[a] - offset) * scale - top
            )
            normaliser += qvalues[a]
    inverse_normaliser = 1.0 / normaliser
    inverse_visits = 1.0 / (1.0 + sum_visits)
    best_action = -1
    best_score = -np.inf
    for a in range(qvalues.shape[0]):
        visits = counts[b, node, VISITS, a]
        if visits > 0:
            score = qvalues[a] * inverse_normaliser - visits * inverse_visits
        elif a == best_unvisited:
            score = (
                np.float64(stats[b, node, PRIOR_PROBS, a]) * unvisited_weight * inverse_normaliser
            )
        else:
            continue
        if score > best_score or best_action < 0:
            best_score = score
            best_action = a
    return best_action


@numba.njit(cache=True, inline="always")
def gumbel_root_action_completed(
    counts, stats, legal, root_gumbel, b, raw_value, qt, considered_visit, qvalues
):
    """Sequential halving at the root: among legal actions with ``considered_visit`` visits, the
    largest ``gumbel + logit + sigma(completed Q)`` (logits are stored shifted to max 0)."""
    offset, scale, unvisited_q, _, _, _ = completed_sigma(
        counts, stats, legal, b, 0, raw_value, qt, qvalues
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
