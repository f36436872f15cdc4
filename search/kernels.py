"""The numba kernels of one search: initialise roots, descend (select), expand and back up.

Per simulation the orchestrator (`search.search`) makes exactly two kernel calls for all B
roots -- `simulate` and `expand_and_backup` -- around one batched model call. Each kernel has a
serial and a ``prange`` driver around the same per-root function; the parallel one pays a
thread-pool wake-up per call, so it is used only for large batches. The per-root functions
unpack the `Tree` once and hand plain arrays to the inlined per-node rules.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba
import numpy as np

from search.action_selection import (
    considered_argmax,
    gumbel_interior_action,
    puct_action,
    puct_action_tree_min_max,
)
from search.borrow import borrow
from search.gumbel_completed import gumbel_interior_action_completed, gumbel_root_action_completed
from search.qtransforms import (
    COMPLETED_BY_MIX_VALUE,
    TREE_MIN_MAX,
    QTransform,
    child_qvalue,
    parent_mean_qvalue,
    transformed_qvalues,
)
from search.tree import (
    DISCOUNTS,
    INDEX,
    NO_PARENT,
    ORDER,
    PRIOR_LOGITS,
    PRIOR_PROBS,
    REWARDS,
    ROOT_INDEX,
    UNVISITED,
    VALUES,
    VISITS,
)

POLICY_MUZERO = 0
POLICY_GUMBEL = 1

# Status codes written by `expand_and_backup` for each root.
OK = 0
BAD_VALUE = 1
BAD_REWARD = 2
BAD_DISCOUNT = 3
BAD_LOGITS = 4
NO_LEGAL_ACTION = 5
NO_FINITE_LOGIT = 6
BAD_ROOT_STATE = 7  # a TabularModel root state id out of range

# Reassociation lets LLVM vectorise the per-node sums and min/max over actions; it changes
# results by float32 rounding only. No nnan/ninf: the kernels check model outputs for NaN.
FASTMATH = {"reassoc", "nsz", "contract", "arcp"}

_FLOAT32_MIN = np.float32(np.finfo(np.float32).min)
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


class KernelParams(NamedTuple):
    """Every number the kernels read, as one flat record (numba's parallel loops cannot take
    nested records). Build it with `kernel_params`."""

    policy: int
    qtransform_kind: int
    epsilon: float
    min_value: float
    max_value: float
    floor: float
    unvisited_parent_mean: bool
    value_scale: float
    maxvisit_init: float
    rescale_values: bool
    use_mixed_value: bool
    pb_c_init: float
    pb_c_base: float
    max_depth: int
    value_prefix_horizon: int  # 0 = rewards are per edge; H > 0 = value prefix, reset every H


@functools.lru_cache(maxsize=256)  # immutable, and the same few per program: built once
def kernel_params(
    *,
    policy: int,
    qtransform: QTransform,
    max_depth: int,
    value_prefix_horizon: int,
    pb_c_init: float = 1.25,
    pb_c_base: float = 19652.0,
) -> KernelParams:
    # Coerced so that the kernels always see the same field types (one compiled signature).
    return KernelParams(
        policy=int(policy),
        qtransform_kind=int(qtransform.kind),
        epsilon=float(qtransform.epsilon),
        min_value=float(qtransform.min_value),
        max_value=float(qtransform.max_value),
        floor=float(qtransform.floor),
        unvisited_parent_mean=bool(qtransform.unvisited_parent_mean),
        value_scale=float(qtransform.value_scale),
        maxvisit_init=float(qtransform.maxvisit_init),
        rescale_values=bool(qtransform.rescale_values),
        use_mixed_value=bool(qtransform.use_mixed_value),
        pb_c_init=float(pb_c_init),
        pb_c_base=float(pb_c_base),
        max_depth=int(max_depth),
        value_prefix_horizon=int(value_prefix_horizon),
    )


class Pending(NamedTuple):
    """Per-root result of `simulate`, read by the model call and `expand_and_backup`. All ``[B]``.

    parent_index: node whose embedding the model continues from.
    action: action taken from it.
    node_index: node that receives the model's output (new, or re-evaluated at max_depth).
    depth: depth of ``node_index``.
    is_reset: value-prefix mode: the new node starts a new horizon; the caller zeros the
        recurrent state it stores for that node.
    status: error code of `expand_and_backup` (0 = OK).
    """

    parent_index: np.ndarray
    action: np.ndarray
    node_index: np.ndarray
    depth: np.ndarray
    is_reset: np.ndarray
    status: np.ndarray


class Roots(NamedTuple):
    """The roots as the kernels take them (`init_root`). Build it with `make_roots`.

    prior_logits: ``[B, A]`` float32; value: ``[B]`` float32; legal: ``[B, A]`` bool.
    noise: ``[B, A]`` float64 Dirichlet noise (``[0, 0]`` when ``noise_fraction`` is 0).
    noise_fraction: float; max_considered: int, Gumbel's m (0 for PUCT).
    num_considered: ``[B]`` int32, written by `init_root`: ``min(legal actions, m)``.
    """

    prior_logits: np.ndarray
    value: np.ndarray
    legal: np.ndarray
    noise: np.ndarray
    noise_fraction: float
    max_considered: int
    num_considered: np.ndarray


_NO_NOISE = np.zeros((0, 0), np.float64)


def make_roots(prior_logits, value, legal, noise, noise_fraction, max_considered) -> Roots:
    """A `Roots` record of fixed field types from validated arrays (``noise`` may be None)."""
    noise = _NO_NOISE if noise is None else np.ascontiguousarray(noise, np.float64)
    return Roots(
        prior_logits,
        value,
        legal,
        noise,
        float(noise_fraction),
        int(max_considered),
        np.empty(value.shape[0], np.int32),
    )


class RootResults(NamedTuple):
    """What a search reports about its roots (`root_result`).

    root_value: ``[B]`` float32; visit_counts: ``[B, A]`` int32; qvalues: ``[B, A]`` float32.
    improved_logits: ``[B, A]`` float64, Gumbel's ``logits + sigma(completed Q)`` shifted to a
        largest value of 0, ``-inf`` where illegal (``[0, 0]`` for PUCT): the improved policy's
        logits, ready for its softmax.
    action: ``[B]`` int32, Gumbel's final choice (``[0]`` for PUCT).
    """

    root_value: np.ndarray
    visit_counts: np.ndarray
    qvalues: np.ndarray
    improved_logits: np.ndarray
    action: np.ndarray


def allocate_root_results(batch_size: int, num_actions: int, gumbel: bool) -> RootResults:
    rows = batch_size if gumbel else 0
    return RootResults(
        np.empty(batch_size, np.float32),
        np.empty((batch_size, num_actions), np.int32),
        np.empty((batch_size, num_actions), np.float32),
        np.empty((rows, num_actions if gumbel else 0), np.float64),
        np.empty(rows, np.int32),
    )


def allocate_pending(status: np.ndarray) -> Pending:
    """Work arrays for ``B = len(status)`` roots around the given ``[B]`` int32 status array."""
    batch_size = status.shape[0]
    return Pending(
        parent_index=np.zeros(batch_size, np.int32),
        action=np.zeros(batch_size, np.int32),
        node_index=np.zeros(batch_size, np.int32),
        depth=np.zeros(batch_size, np.int32),
        is_reset=np.zeros(batch_size, np.bool_),
        status=status,
    )


# ----------------------------------------------------------------------------- node rows


@numba.njit(cache=True, inline="always")
def _write_policy_row(stats, children_legal, b, node, logits, legal):
    """Masked logits: the largest legal logit shifted to 0, illegal ones at float32 min. The
    probabilities wait for `write_prior_probs`, since most nodes are leaves that no selection
    ever reads.

    Returns the status: `BAD_LOGITS` for NaN/+inf, `NO_LEGAL_ACTION` for an empty mask,
    `NO_FINITE_LOGIT` when every legal action has logit -inf."""
    num_actions = logits.shape[0]
    max_logit = -np.inf
    any_legal = False
    for a in range(num_actions):
        logit = np.float64(logits[a])
        if np.isnan(logit) or logit == np.inf:
            return BAD_LOGITS
        children_legal[b, node, a] = legal[a]
        if legal[a]:
            any_legal = True
            max_logit = max(max_logit, logit)
    if not any_legal:
        return NO_LEGAL_ACTION
    if max_logit == -np.inf:
        return NO_FINITE_LOGIT
    for a in range(num_actions):
        if legal[a]:
            stats[b, node, PRIOR_LOGITS, a] = np.float64(logits[a]) - max_logit
        else:
            stats[b, node, PRIOR_LOGITS, a] = _FLOAT32_MIN
        stats[b, node, PRIOR_PROBS, a] = 0.0  # until `write_prior_probs`
    return OK


@numba.njit(cache=True, inline="always")
def write_prior_probs(stats, children_legal, b, node):
    """``PRIOR_PROBS`` = softmax of the node's stored (shifted) logits over its legal actions."""
    num_actions = stats.shape[3]
    normaliser = 0.0
    for a in range(num_actions):
        if children_legal[b, node, a]:
            probability = np.exp(stats[b, node, PRIOR_LOGITS, a])  # float32 exp: 3x cheaper
            stats[b, node, PRIOR_PROBS, a] = probability
            normaliser += probability
        else:
            stats[b, node, PRIOR_PROBS, a] = 0.0
    inverse = 1.0 / normaliser
    for a in range(num_actions):
        stats[b, node, PRIOR_PROBS, a] *= inverse


@numba.njit(cache=True, inline="always")
def _clear_children(stats, counts, b, node):
    # One contiguous row per loop: each becomes a few vector stores.
    num_actions = counts.shape[3]
    for a in range(num_actions):
        counts[b, node, INDEX, a] = UNVISITED
    for a in range(num_actions):
        counts[b, node, VISITS, a] = 0
    for a in range(num_actions):
        counts[b, node, ORDER, a] = UNVISITED
    for a in range(num_actions):
        stats[b, node, VALUES, a] = 0.0
    for a in range(num_actions):
        stats[b, node, REWARDS, a] = 0.0
    for a in range(num_actions):
        stats[b, node, DISCOUNTS, a] = 0.0


@numba.njit(cache=True)
def _clear_slot(tree, b, node):
    """An unused node slot looks like mctx's: no visits, no parent, zeros."""
    tree.node_visits[b, node] = 0
    tree.raw_values[b, node] = 0.0
    tree.node_values[b, node] = 0.0
    tree.parents[b, node] = NO_PARENT
    tree.action_from_parent[b, node] = NO_PARENT
    tree.node_depth[b, node] = 0
    tree.value_prefix[b, node] = 0.0
    tree.is_reset[b, node] = False
    tree.prior_probs_ready[b, node] = False
    tree.children_stats[b, node] = 0.0
    tree.children_counts[b, node, INDEX] = UNVISITED
    tree.children_counts[b, node, VISITS] = 0
    tree.children_counts[b, node, ORDER] = UNVISITED
    tree.children_legal[b, node] = False


# ----------------------------------------------------------------------------- roots


@numba.njit(cache=True, inline="always")
def init_root(tree, b, roots, mixed):
    """Writes node 0 of tree ``b`` and ``roots.num_considered[b]``; returns a status code
    (`BAD_LOGITS` for any non-finite root logit, `BAD_VALUE`, `NO_LEGAL_ACTION`). With
    ``noise_fraction > 0`` the prior becomes ``log((1 - f) * softmax(logits) + f * noise)``
    (AlphaZero's Dirichlet exploration, as mctx mixes it: over all actions, before masking).
    ``mixed`` is a float64 ``[A]`` work row. Not fastmath: the roundings are the policy's."""
    prior_logits, value, legal = roots.prior_logits, roots.value, roots.legal
    num_actions = prior_logits.shape[1]
    num_legal = 0
    for a in range(num_actions):
        mixed[a] = prior_logits[b, a]
        if not np.isfinite(mixed[a]):
            return BAD_LOGITS
        num_legal += legal[b, a]
    if not np.isfinite(value[b]):
        return BAD_VALUE
    roots.num_considered[b] = min(num_legal, roots.max_considered)
    noise_fraction = roots.noise_fraction
    if noise_fraction > 0.0:
        max_logit = mixed.max()
        normaliser = 0.0
        for a in range(num_actions):
            mixed[a] = np.exp(mixed[a] - max_logit)
            normaliser += mixed[a]
        for a in range(num_actions):
            probability = (1.0 - noise_fraction) * mixed[a] / normaliser + noise_fraction * (
                roots.noise[b, a]
            )
            mixed[a] = np.log(max(probability, _FLOAT32_TINY))
    status = _write_policy_row(
        tree.children_stats, tree.children_legal, b, ROOT_INDEX, mixed, legal[b]
    )
    tree.prior_probs_ready[b, ROOT_INDEX] = False  # the first descent fills them
    _clear_children(tree.children_stats, tree.children_counts, b, ROOT_INDEX)
    tree.node_visits[b, ROOT_INDEX] = 1
    tree.raw_values[b, ROOT_INDEX] = value[b]
    tree.node_values[b, ROOT_INDEX] = value[b]
    tree.parents[b, ROOT_INDEX] = NO_PARENT
    tree.action_from_parent[b, ROOT_INDEX] = NO_PARENT
    tree.node_depth[b, ROOT_INDEX] = 0
    tree.value_prefix[b, ROOT_INDEX] = 0.0
    tree.is_reset[b, ROOT_INDEX] = True
    tree.tree_min_max[b, 0] = np.inf
    tree.tree_min_max[b, 1] = -np.inf
    return status


@numba.njit(cache=True)
def init_roots(tree, roots, scratch, status):
    """`init_root` for every root (``scratch`` ``[B, A]`` float64 work rows)."""
    for b in range(status.shape[0]):
        status[b] = init_root(tree, b, roots, scratch[b])


# ----------------------------------------------------------------------------- select


@numba.njit(cache=True, fastmath=FASTMATH, inline="always")
def select_action(tree, b, node, depth, params, considered_visit, parent_q, scratch):
    """The action the policy's rule picks at ``node`` of tree ``b`` (at ``depth``; the root is
    depth 0). Returns ``(action, mean_q)``: the mean Q that `qtransform_tree_min_max` hands to
    the unvisited children below (0 for other transforms). ``scratch`` is an ``[A]`` float64 work
    row, and its length is the number of actions the rule considers."""
    counts = tree.children_counts
    stats = tree.children_stats
    legal = tree.children_legal
    mean_q = 0.0
    # Gumbel with its default transform has a faster path that needs no per-action sigma.
    if params.policy == POLICY_GUMBEL and params.qtransform_kind == COMPLETED_BY_MIX_VALUE:
        raw_value = np.float64(tree.raw_values[b, node])
        if depth == 0:
            action = gumbel_root_action_completed(
                counts,
                stats,
                legal,
                tree.root_gumbel,
                b,
                raw_value,
                params,
                considered_visit,
                scratch,
            )
        else:
            action = gumbel_interior_action_completed(
                counts, stats, legal, b, node, raw_value, params, scratch
            )
        return action, mean_q
    if params.unvisited_parent_mean:
        mean_q = parent_mean_qvalue(stats, counts, b, node, depth == 0, parent_q)
    if params.policy == POLICY_MUZERO and params.qtransform_kind == TREE_MIN_MAX:
        action = puct_action_tree_min_max(
            counts,
            stats,
            legal,
            b,
            node,
            tree.node_visits[b, node],
            params,
            mean_q,
            tree.tree_min_max[b, 0],
            tree.tree_min_max[b, 1],
            scratch.shape[0],
        )
        return action, mean_q
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
    if params.policy == POLICY_MUZERO:
        action = puct_action(
            counts, stats, legal, b, node, tree.node_visits[b, node], params, scratch
        )
    elif depth == 0:
        action = considered_argmax(
            counts, stats, legal, tree.root_gumbel, b, considered_visit, scratch
        )
    else:
        action = gumbel_interior_action(counts, stats, legal, b, node, scratch)
    return action, mean_q


@numba.njit(cache=True, fastmath=FASTMATH, inline="always")
def simulate_root(tree, b, params, considered_visit, scratch):
    """Descends tree ``b`` from the root to an unexpanded edge (or to ``max_depth``).

    Returns ``(parent, action, child, depth)``; ``child`` is `UNVISITED` for a new edge.
    Inlined (as is `expand_node`): a call passes the tree record's 14 array structs by value,
    which cost a third of a tabular Gumbel simulation."""
    counts = tree.children_counts
    stats = tree.children_stats
    node = ROOT_INDEX
    depth = 0
    parent_q = 0.0
    while True:
        if not tree.prior_probs_ready[b, node]:  # a leaf until now
            write_prior_probs(stats, tree.children_legal, b, node)
            tree.prior_probs_ready[b, node] = True
        action, mean_q = select_action(
            tree, b, node, depth, params, considered_visit, parent_q, scratch
        )
        child = counts[b, node, INDEX, action]
        depth += 1
        if child == UNVISITED or depth >= params.max_depth:
            return node, action, child, depth
        # The mean Q is in this node's view; the child sees it through the edge's sign.
        parent_q = mean_q * np.sign(stats[b, node, DISCOUNTS, action])
        node = child


@numba.njit(cache=True, inline="always")
def root_considered_visit(params, considered_table, num_considered, b, sim):
    """Gumbel root schedule: the visit count an action needs to be considered at ``sim``."""
    if params.policy == POLICY_GUMBEL:
        return considered_table[num_considered[b], sim]
    return 0


@numba.njit(cache=True, inline="always")
def is_reset(params, depth):
    return params.value_prefix_horizon > 0 and depth % params.value_prefix_horizon == 0


@numba.njit(cache=True, fastmath=FASTMATH)
def _simulate_one(tree, b, params, sim, considered_table, num_considered, pending, scratch):
    # Borrowed here, not in the drivers: numba's parfor lowering rejects borrowed records.
    tree, pending, scratch = borrow((tree, pending, scratch))
    considered_visit = root_considered_visit(params, considered_table, num_considered, b, sim)
    parent, action, child, depth = simulate_root(tree, b, params, considered_visit, scratch[b])
    pending.parent_index[b] = parent
    pending.action[b] = action
    pending.node_index[b] = sim + 1 if child == UNVISITED else child
    pending.depth[b] = depth
    pending.is_reset[b] = is_reset(params, depth)


@numba.njit(cache=True)
def simulate_serial(tree, params, sim, considered_table, num_considered, pending, scratch):
    for b in range(pending.parent_index.shape[0]):
        _simulate_one(tree, b, params, sim, considered_table, num_considered, pending, scratch)


@numba.njit(cache=True, parallel=True)
def simulate_parallel(tree, params, sim, considered_table, num_considered, pending, scratch):
    # `_simulate_one` must not be inlined here: numba's parfor lowering mishandles inlined
    # writes through a record of arrays (the writes are lost).
    for b in numba.prange(pending.parent_index.shape[0]):
        _simulate_one(tree, b, params, sim, considered_table, num_considered, pending, scratch)


# ----------------------------------------------------------------------------- expand + backup


@numba.njit(cache=True, fastmath=FASTMATH, inline="always")
def expand_node(
    tree,
    b,
    params,
    sim,
    parent,
    action,
    node,
    depth,
    is_reset,
    reward,
    discount,
    logits,
    value,
    legal,
):
    """Stores the model's output (scalars, ``logits``/``legal`` rows ``[A]``) for ``node``, the
    child of ``parent`` along ``action`` in tree ``b``, and backs it up; returns a status code."""
    if not np.isfinite(value):
        return BAD_VALUE
    if not np.isfinite(reward):
        return BAD_REWARD
    if not np.isfinite(discount):
        return BAD_DISCOUNT
    stats = tree.children_stats
    counts = tree.children_counts
    is_new = counts[b, parent, INDEX, action] == UNVISITED
    if not is_new:
        _clear_slot(tree, b, sim + 1)  # max_depth re-evaluation leaves this slot unused
    status = _write_policy_row(stats, tree.children_legal, b, node, logits, legal)
    if status != OK:
        return status
    tree.prior_probs_ready[b, node] = False
    if is_new:
        _clear_children(stats, counts, b, node)
        tree.node_visits[b, node] = 0
        tree.parents[b, node] = parent
        tree.action_from_parent[b, node] = action
        tree.node_depth[b, node] = depth
        counts[b, parent, INDEX, action] = node
        _append_child(counts, b, parent, action)
    tree.node_visits[b, node] += 1
    tree.raw_values[b, node] = value
    tree.node_values[b, node] = value
    edge_reward = np.float64(reward)
    if params.value_prefix_horizon > 0:
        # EfficientZero: the model predicts the reward summed since the last reset node.
        tree.value_prefix[b, node] = reward
        tree.is_reset[b, node] = is_reset
        if not tree.is_reset[b, parent]:
            edge_reward -= tree.value_prefix[b, parent]
    else:
        tree.value_prefix[b, node] = 0.0
        tree.is_reset[b, node] = False
    stats[b, parent, REWARDS, action] = edge_reward
    stats[b, parent, DISCOUNTS, action] = discount
    _backup(
        tree.node_visits,
        tree.node_values,
        tree.parents,
        tree.action_from_parent,
        stats,
        counts,
        tree.tree_min_max,
        b,
        node,
    )
    return OK


@numba.njit(cache=True, inline="always")
def _append_child(counts, b, node, action):
    """Records ``action`` as the next child created under ``node`` (its `ORDER` row)."""
    for k in range(counts.shape[3]):
        if counts[b, node, ORDER, k] == UNVISITED:
            counts[b, node, ORDER, k] = action
            return


@numba.njit(cache=True, fastmath=FASTMATH)
def _expand_pending(tree, b, params, sim, pending, reward, discount, logits, value, legal):
    tree, pending, logits, legal = borrow((tree, pending, logits, legal))
    return expand_node(
        tree,
        b,
        params,
        sim,
        pending.parent_index[b],
        pending.action[b],
        pending.node_index[b],
        pending.depth[b],
        pending.is_reset[b],
        reward[b],
        discount[b],
        logits[b],
        value[b],
        legal[b],
    )


@numba.njit(cache=True, inline="always")
def _backup(
    node_visits, node_values, parents, action_from_parent, stats, counts, tree_min_max, b, leaf
):
    """mctx's backward pass: ``G <- r + discount * G`` and running means up to the root; also
    the tree-wide min/max of the backed-up Q values (EfficientZero's ``min_max_stats``)."""
    value = np.float64(node_values[b, leaf])
    index = leaf
    while index != ROOT_INDEX:
        parent = parents[b, index]
        action = action_from_parent[b, index]
        count = node_visits[b, parent]
        value = stats[b, parent, REWARDS, action] + stats[b, parent, DISCOUNTS, action] * value
        node_values[b, parent] = (node_values[b, parent] * np.float64(count) + value) / (
            count + 1.0
        )
        node_visits[b, parent] = count + 1
        stats[b, parent, VALUES, action] = node_values[b, index]
        counts[b, parent, VISITS, action] += 1
        q = child_qvalue(stats, b, parent, action)
        tree_min_max[b, 0] = min(tree_min_max[b, 0], q)
        tree_min_max[b, 1] = max(tree_min_max[b, 1], q)
        index = parent


@numba.njit(cache=True)
def expand_and_backup_serial(tree, params, sim, pending, reward, discount, logits, value, legal):
    """Returns the number of roots whose model output was refused (see ``pending.status``)."""
    failures = 0
    for b in range(pending.parent_index.shape[0]):
        status = _expand_pending(
            tree, b, params, sim, pending, reward, discount, logits, value, legal
        )
        pending.status[b] = status
        failures += status != OK
    return failures


@numba.njit(cache=True, parallel=True)
def expand_and_backup_parallel(tree, params, sim, pending, reward, discount, logits, value, legal):
    failures = 0
    for b in numba.prange(pending.parent_index.shape[0]):
        status = _expand_pending(
            tree, b, params, sim, pending, reward, discount, logits, value, legal
        )
        pending.status[b] = status
        failures += status != OK
    return failures


# ----------------------------------------------------------------------------- outputs


@numba.njit(cache=True, inline="always")
def root_result(tree, b, params, results):
    """mctx's root summary of tree ``b``: value, visit counts and Q values (``r + discount *
    v`` in float64, 0 where unvisited); for Gumbel also the final choice (among the most visited
    root actions, the largest ``gumbel + logits + sigma(completed Q)``) and the improved
    policy's shifted logits. Not fastmath: every rounding here is numpy's, so the outputs equal
    ``(r + d * v).astype(float32)`` and the improved policy's numpy arithmetic bit for bit."""
    stats, counts = tree.children_stats, tree.children_counts
    results.root_value[b] = tree.node_values[b, ROOT_INDEX]
    for a in range(results.qvalues.shape[1]):
        results.visit_counts[b, a] = counts[b, ROOT_INDEX, VISITS, a]
        results.qvalues[b, a] = np.float64(stats[b, ROOT_INDEX, REWARDS, a]) + np.float64(
            stats[b, ROOT_INDEX, DISCOUNTS, a]
        ) * np.float64(stats[b, ROOT_INDEX, VALUES, a])
    if params.policy != POLICY_GUMBEL:
        return
    completed_qvalues = results.improved_logits[b]  # sigma(completed Q) first
    transformed_qvalues(
        stats,
        counts,
        b,
        ROOT_INDEX,
        np.float64(tree.node_values[b, ROOT_INDEX]),
        np.float64(tree.raw_values[b, ROOT_INDEX]),
        params,
        0.0,
        tree.tree_min_max,
        completed_qvalues,
    )
    most_visits = 0
    for a in range(completed_qvalues.shape[0]):
        most_visits = max(most_visits, counts[b, ROOT_INDEX, VISITS, a])
    results.action[b] = considered_argmax(
        counts,
        stats,
        tree.children_legal,
        tree.root_gumbel,
        b,
        most_visits,
        completed_qvalues,
    )
    _improved_logits(stats, tree.children_legal, b, completed_qvalues)


@numba.njit(cache=True, inline="always")
def _improved_logits(stats, legal, b, sigma):
    """Overwrites ``sigma`` ``[A]`` with ``logits + sigma`` (float64 sums, ``-inf`` where
    illegal) minus its largest entry: additions, a max and subtractions, which round the same
    in numba as in numpy. The exps and their sum stay in numpy (`gumbel_muzero_policy`): numpy's
    SIMD exp and pairwise sum round differently in the last bit, and that one bit in the policy
    targets is enough to change a training run's trajectory."""
    largest = -np.inf
    for a in range(sigma.shape[0]):
        if legal[b, ROOT_INDEX, a]:
            sigma[a] += np.float64(stats[b, ROOT_INDEX, PRIOR_LOGITS, a])
            largest = max(largest, sigma[a])
        else:
            sigma[a] = -np.inf
    for a in range(sigma.shape[0]):
        sigma[a] -= largest


@numba.njit(cache=True)
def root_results(tree, params, results):
    """`root_result` for every root."""
    for b in range(results.root_value.shape[0]):
        root_result(tree, b, params, results)
