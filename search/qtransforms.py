"""Q transforms: how a node's child Q values become the value term of action selection.

The public constructors return a `QTransform` record, the numba kernels read it. The names and
defaults follow mctx (``mctx/_src/qtransforms.py``) so its users can translate directly; the
tree-wide min-max transform is EfficientZero/LightZero's.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from search.tree import DISCOUNTS, ORDER, PRIOR_PROBS, REWARDS, UNVISITED, VALUES, VISITS

PARENT_AND_SIBLINGS = 0
MIN_MAX = 1
TREE_MIN_MAX = 2
COMPLETED_BY_MIX_VALUE = 3
QTRANSFORM_KINDS = (PARENT_AND_SIBLINGS, MIN_MAX, TREE_MIN_MAX, COMPLETED_BY_MIX_VALUE)

_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


class QTransform(NamedTuple):
    """Which transform and its numbers; build it with the ``qtransform_*`` functions below."""

    kind: int
    epsilon: float = 1e-8
    min_value: float = 0.0
    max_value: float = 1.0
    floor: float = 0.01
    unvisited_parent_mean: bool = False
    value_scale: float = 0.1
    maxvisit_init: float = 50.0
    rescale_values: bool = True
    use_mixed_value: bool = True


def qtransform_by_parent_and_siblings(*, epsilon: float = 1e-8) -> QTransform:
    """mctx default for PUCT: Q normalised to [0, 1] by the min/max over the node's value and
    its visited children's Q; unvisited children score 0."""
    return QTransform(PARENT_AND_SIBLINGS, epsilon=epsilon)


def qtransform_by_min_max(*, min_value: float, max_value: float) -> QTransform:
    """Fixed bounds: ``(Q - min_value) / (max_value - min_value)``; unvisited children score 0."""
    if not max_value > min_value:
        raise ValueError(
            f"qtransform_by_min_max needs max_value > min_value; got {min_value=}, {max_value=}"
        )
    if not (np.isfinite(min_value) and np.isfinite(max_value)):
        raise ValueError(
            f"qtransform_by_min_max needs finite bounds; got {min_value=}, {max_value=}"
        )
    return QTransform(MIN_MAX, min_value=float(min_value), max_value=float(max_value))


def qtransform_tree_min_max(*, floor: float = 0.01, unvisited: str = "parent_mean") -> QTransform:
    """EfficientZero/LightZero: Q normalised by the min/max of every Q backed up anywhere in
    the tree, with the range floored at ``floor`` (their ``value_delta_max``), clipped to
    [0, 1]. ``unvisited="parent_mean"`` scores unvisited children with the mean Q of the
    visited siblings and the parent's own estimate (their ``compute_mean_q``), which keeps
    trees shallow; ``unvisited="min"`` scores them 0 like mctx.

    Deliberate differences from LightZero/EfficientZero's C++ trees: the pUCT parent count stays
    mctx's ``1 + sum N`` (theirs is ``sum N``, so ``sqrt(0) = 0`` turns the first selection at every
    fresh node into a random tie that ignores the prior); the statistics see the Q of every
    backed-up edge but not their extra ``gamma * V(root)`` sample; before any backup the value term
    is 0 (theirs is the raw, unnormalised value); and in two-player games the parent mean handed to
    a child flips sign across a ``-1`` edge (theirs is passed unflipped)."""
    if unvisited not in ("parent_mean", "min"):
        raise ValueError(f"unvisited must be 'parent_mean' or 'min'; got {unvisited!r}")
    if not floor > 0:
        raise ValueError(f"floor must be > 0; got {floor}")
    return QTransform(
        TREE_MIN_MAX, floor=float(floor), unvisited_parent_mean=unvisited == "parent_mean"
    )


def qtransform_completed_by_mix_value(
    *,
    value_scale: float = 0.1,
    maxvisit_init: float = 50.0,
    rescale_values: bool = True,
    use_mixed_value: bool = True,
    epsilon: float = 1e-8,
) -> QTransform:
    """Gumbel MuZero (Danihelka et al. 2022, eq. 8-10 and appendix D): unvisited Q completed by
    the mixed value (or the raw value when ``use_mixed_value=False``), optionally rescaled to [0, 1], then ``sigma = (maxvisit_init + max N) *
    value_scale * Q``."""
    for name, number in (("value_scale", value_scale), ("maxvisit_init", maxvisit_init)):
        if not (np.isfinite(number) and number >= 0):
            raise ValueError(
                f"qtransform_completed_by_mix_value needs {name} finite and >= 0; got {number!r}"
            )
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(
            f"qtransform_completed_by_mix_value needs epsilon finite and > 0; got {epsilon!r}"
        )
    return QTransform(
        COMPLETED_BY_MIX_VALUE,
        epsilon=epsilon,
        value_scale=float(value_scale),
        maxvisit_init=float(maxvisit_init),
        rescale_values=bool(rescale_values),
        use_mixed_value=bool(use_mixed_value),
    )


@numba.njit(cache=True, inline="always")
def child_qvalue(stats, b, node, a):
    """``reward + discount * value`` of edge ``a`` of ``node`` (0 for an unvisited edge)."""
    return stats[b, node, REWARDS, a] + stats[b, node, DISCOUNTS, a] * np.float64(
        stats[b, node, VALUES, a]
    )


@numba.njit(cache=True, inline="always")
def transformed_qvalues(
    stats, counts, b, node, node_value, raw_value, qt, parent_mean_q, tree_min_max, out
):
    """Writes the transformed Q of each child of ``node`` of tree ``b`` into ``out`` ``[A]``.

    ``stats``/``counts`` are `Tree.children_stats`/`children_counts`; ``node_value`` and
    ``raw_value`` are the node's. ``qt`` is any record with the `QTransform` fields (``kind``
    named ``qtransform_kind``), in practice `search.kernels.KernelParams`. ``parent_mean_q``
    and ``tree_min_max`` (``[B, 2]``) are only read by `TREE_MIN_MAX`.
    """
    kind = qt.qtransform_kind
    if kind == COMPLETED_BY_MIX_VALUE:
        _completed_by_mix_value(stats, counts, b, node, raw_value, qt, out)
    elif kind == TREE_MIN_MAX:
        _tree_min_max(
            stats, counts, b, node, qt, parent_mean_q, tree_min_max[b, 0], tree_min_max[b, 1], out
        )
    elif kind == MIN_MAX:
        scale = 1.0 / (qt.max_value - qt.min_value)
        for a in range(out.shape[0]):
            q = child_qvalue(stats, b, node, a) if counts[b, node, VISITS, a] > 0 else qt.min_value
            out[a] = (q - qt.min_value) * scale
    else:
        _by_parent_and_siblings(stats, counts, b, node, node_value, qt.epsilon, out)


@numba.njit(cache=True, inline="always")
def _by_parent_and_siblings(stats, counts, b, node, node_value, epsilon, out):
    low = node_value
    high = node_value
    for a in range(out.shape[0]):
        if counts[b, node, VISITS, a] > 0:
            q = child_qvalue(stats, b, node, a)
            out[a] = q
            low = min(low, q)
            high = max(high, q)
    scale = 1.0 / max(high - low, epsilon)
    for a in range(out.shape[0]):
        out[a] = (out[a] - low) * scale if counts[b, node, VISITS, a] > 0 else 0.0


@numba.njit(cache=True, inline="always")
def _tree_min_max(stats, counts, b, node, qt, parent_mean_q, low, high, out):
    if high < low:  # nothing backed up yet: no value information, prior only
        out[:] = 0.0
        return
    scale = 1.0 / max(high - low, qt.floor)
    for a in range(out.shape[0]):
        if counts[b, node, VISITS, a] > 0:
            q = child_qvalue(stats, b, node, a)
        elif qt.unvisited_parent_mean:
            q = parent_mean_q
        else:
            q = low
        out[a] = min(1.0, max(0.0, (q - low) * scale))


@numba.njit(cache=True, inline="always")
def parent_mean_qvalue(stats, counts, b, node, is_root, parent_q):
    """EfficientZero's ``compute_mean_q``: the value given to unvisited children.

    Root: mean Q of the visited children. Interior: ``(parent_q + sum Q) / (n + 1)`` where
    ``parent_q`` is the estimate passed down from the parent, already in this node's view.
    """
    total = 0.0
    count = 0
    for k in range(counts.shape[3]):  # the visited children, in the order of their first visit
        a = counts[b, node, ORDER, k]
        if a == UNVISITED:
            break
        total += child_qvalue(stats, b, node, a)
        count += 1
    if is_root and count > 0:
        return total / count
    return (parent_q + total) / (count + 1)


@numba.njit(cache=True, inline="always")
def completed_qvalue_stats(stats, counts, b, node, raw_value, qt, qvalues):
    """One pass over the visited children of ``node`` (its `ORDER` row) for the
    completed-by-mix-value transform.

    Writes the Q of visited children to ``qvalues`` (other entries untouched) and returns
    ``(offset, scale, unvisited_q, sum_visits, visited_prior, num_visited)``: ``sigma(q) = (q -
    offset) * scale``, ``unvisited_q`` completes every unvisited action (illegal ones too, as in
    mctx), ``visited_prior`` is the prior mass of the visited children and ``num_visited`` the
    length of the node's `ORDER` list.
    """
    sum_visits = 0
    max_visits = 0
    sum_floored_probs = 0.0
    weighted_q = 0.0
    visited_prior = 0.0
    low = np.inf
    high = -np.inf
    num_visited = 0
    for k in range(qvalues.shape[0]):
        a = counts[b, node, ORDER, k]
        if a == UNVISITED:
            break
        num_visited += 1
        visits = counts[b, node, VISITS, a]
        q = child_qvalue(stats, b, node, a)
        qvalues[a] = q
        low = min(low, q)
        high = max(high, q)
        sum_visits += visits
        max_visits = max(max_visits, visits)
        prior = np.float64(stats[b, node, PRIOR_PROBS, a])
        floored = max(_FLOAT32_TINY, prior)
        sum_floored_probs += floored
        weighted_q += floored * q
        visited_prior += prior
    any_unvisited = num_visited < qvalues.shape[0]
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
    return offset, scale, unvisited_q, sum_visits, visited_prior, num_visited


@numba.njit(cache=True, inline="always")
def _completed_by_mix_value(stats, counts, b, node, raw_value, qt, out):
    offset, scale, unvisited_q, _, _, _ = completed_qvalue_stats(
        stats, counts, b, node, raw_value, qt, out
    )
    for a in range(out.shape[0]):
        q = out[a] if counts[b, node, VISITS, a] > 0 else unvisited_q
        out[a] = (q - offset) * scale
