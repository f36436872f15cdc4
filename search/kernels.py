"""The numba kernels of one search: initialise roots, descend (select), expand and back up.

Per simulation the orchestrator (`search.search`) makes exactly two kernel calls for all B
roots -- `simulate` and `expand_and_backup` -- around one batched model call. Each kernel has a
serial and a ``prange`` driver around the same per-root function; the parallel one pays a
thread-pool wake-up per call, so it is used only for large batches.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from search.action_selection import (
    considered_argmax,
    gumbel_interior_action,
    gumbel_root_action,
    puct_action,
)
from search.qtransforms import QTransform, parent_mean_qvalue, transformed_qvalues
from search.tree import NO_PARENT, ROOT_INDEX, UNVISITED, child_qvalue

POLICY_MUZERO = 0
POLICY_GUMBEL = 1

# Status codes written by `expand_and_backup` for each root.
OK = 0
BAD_VALUE = 1
BAD_REWARD = 2
BAD_DISCOUNT = 3
BAD_LOGITS = 4
NO_LEGAL_ACTION = 5

_FLOAT32_MIN = np.float32(np.finfo(np.float32).min)
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


class KernelParams(NamedTuple):
    """Every number the kernels read, as one record (cheap to pass to numba)."""

    policy: int
    qtransform: QTransform
    pb_c_init: float
    pb_c_base: float
    max_depth: int
    value_prefix_horizon: int  # 0 = rewards are per edge; H > 0 = value prefix, reset every H


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


def allocate_pending(batch_size: int) -> Pending:
    return Pending(
        parent_index=np.zeros(batch_size, np.int32),
        action=np.zeros(batch_size, np.int32),
        node_index=np.zeros(batch_size, np.int32),
        depth=np.zeros(batch_size, np.int32),
        is_reset=np.zeros(batch_size, np.bool_),
        status=np.zeros(batch_size, np.int32),
    )


# ----------------------------------------------------------------------------- node rows


@numba.njit(cache=True, inline="always")
def _write_policy_row(tree, b, node, logits, legal):
    """Masked logits (max legal logit shifted to 0, illegal at float32 min) and their softmax.

    Returns the status (`BAD_LOGITS` for NaN/+inf, `NO_LEGAL_ACTION` for an empty mask)."""
    num_actions = logits.shape[0]
    max_logit = -np.inf
    for a in range(num_actions):
        logit = np.float64(logits[a])
        if np.isnan(logit) or logit == np.inf:
            return BAD_LOGITS
        tree.children_legal[b, node, a] = legal[a]
        if legal[a]:
            max_logit = max(max_logit, logit)
    if max_logit == -np.inf:
        return NO_LEGAL_ACTION
    normaliser = 0.0
    for a in range(num_actions):
        if legal[a]:
            shifted = np.float64(logits[a]) - max_logit
            tree.children_prior_logits[b, node, a] = shifted
            normaliser += np.exp(shifted)
        else:
            tree.children_prior_logits[b, node, a] = _FLOAT32_MIN
    for a in range(num_actions):
        if legal[a]:
            tree.children_prior_probs[b, node, a] = np.exp(tree.children_prior_logits[b, node, a]) / normaliser
        else:
            tree.children_prior_probs[b, node, a] = 0.0
    return OK


@numba.njit(cache=True, inline="always")
def _clear_children(tree, b, node):
    for a in range(tree.children_index.shape[2]):
        tree.children_index[b, node, a] = UNVISITED
        tree.children_visits[b, node, a] = 0
        tree.children_values[b, node, a] = 0.0
        tree.children_rewards[b, node, a] = 0.0
        tree.children_discounts[b, node, a] = 0.0


@numba.njit(cache=True, inline="always")
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
    _clear_children(tree, b, node)
    for a in range(tree.children_index.shape[2]):
        tree.children_prior_logits[b, node, a] = 0.0
        tree.children_prior_probs[b, node, a] = 0.0
        tree.children_legal[b, node, a] = False


# ----------------------------------------------------------------------------- roots


@numba.njit(cache=True)
def init_roots(tree, prior_logits, value, legal, noise, noise_fraction, status):
    """Writes node 0 of every tree. With ``noise_fraction > 0`` the prior becomes
    ``log((1 - f) * softmax(logits) + f * noise)`` (AlphaZero's Dirichlet exploration, as
    mctx mixes it: over all actions, before masking)."""
    num_actions = prior_logits.shape[1]
    mixed = np.empty(num_actions, np.float64)
    for b in range(prior_logits.shape[0]):
        for a in range(num_actions):
            mixed[a] = prior_logits[b, a]
        if noise_fraction > 0.0:
            max_logit = mixed.max()
            normaliser = 0.0
            for a in range(num_actions):
                mixed[a] = np.exp(mixed[a] - max_logit)
                normaliser += mixed[a]
            for a in range(num_actions):
                probability = (1.0 - noise_fraction) * mixed[a] / normaliser + noise_fraction * noise[b, a]
                mixed[a] = np.log(max(probability, _FLOAT32_TINY))
        status[b] = _write_policy_row(tree, b, ROOT_INDEX, mixed, legal[b])
        _clear_children(tree, b, ROOT_INDEX)
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


# ----------------------------------------------------------------------------- select


@numba.njit(cache=True)
def _simulate_root(tree, b, params, considered_visit, pending, scratch):
    """Descends tree ``b`` from the root to an unexpanded edge (or to ``max_depth``)."""
    node = ROOT_INDEX
    depth = 0
    parent_q = 0.0
    track_mean_q = params.qtransform.unvisited_parent_mean
    while True:
        mean_q = 0.0
        if track_mean_q:
            mean_q = parent_mean_qvalue(tree, b, node, depth == 0, parent_q)
        if params.policy == POLICY_GUMBEL:
            if depth == 0:
                action = gumbel_root_action(tree, b, params, considered_visit, scratch)
            else:
                action = gumbel_interior_action(tree, b, node, params, scratch)
        else:
            action = puct_action(tree, b, node, params, mean_q, scratch)
        child = tree.children_index[b, node, action]
        depth += 1
        if child == UNVISITED or depth >= params.max_depth:
            break
        # The mean Q is in this node's view; the child sees it through the edge's sign.
        parent_q = mean_q * np.sign(tree.children_discounts[b, node, action])
        node = child
    pending.parent_index[b] = node
    pending.action[b] = action
    pending.node_index[b] = child
    pending.depth[b] = depth
    horizon = params.value_prefix_horizon
    pending.is_reset[b] = horizon > 0 and depth % horizon == 0


@numba.njit(cache=True)
def simulate_serial(tree, params, sim, considered_table, num_considered, pending, scratch):
    for b in range(pending.parent_index.shape[0]):
        _simulate_one(tree, b, params, sim, considered_table, num_considered, pending, scratch)


@numba.njit(cache=True, parallel=True)
def simulate_parallel(tree, params, sim, considered_table, num_considered, pending, scratch):
    for b in numba.prange(pending.parent_index.shape[0]):
        _simulate_one(tree, b, params, sim, considered_table, num_considered, pending, scratch)


@numba.njit(cache=True, inline="always")
def _simulate_one(tree, b, params, sim, considered_table, num_considered, pending, scratch):
    considered_visit = 0
    if params.policy == POLICY_GUMBEL:
        considered_visit = considered_table[num_considered[b], sim]
    _simulate_root(tree, b, params, considered_visit, pending, scratch[b])
    if pending.node_index[b] == UNVISITED:
        pending.node_index[b] = sim + 1


# ----------------------------------------------------------------------------- expand + backup


@numba.njit(cache=True)
def _expand_root(tree, b, params, sim, pending, reward, discount, logits, value, legal):
    """Stores the model's output for the pending node of tree ``b``; returns a status code."""
    if not np.isfinite(value[b]):
        return BAD_VALUE
    if not np.isfinite(reward[b]):
        return BAD_REWARD
    if not np.isfinite(discount[b]):
        return BAD_DISCOUNT
    parent = pending.parent_index[b]
    action = pending.action[b]
    node = pending.node_index[b]
    is_new = tree.children_index[b, parent, action] == UNVISITED
    if not is_new and node != sim + 1:
        _clear_slot(tree, b, sim + 1)  # max_depth re-evaluation leaves this slot unused
    status = _write_policy_row(tree, b, node, logits[b], legal[b])
    if status != OK:
        return status
    if is_new:
        _clear_children(tree, b, node)
        tree.node_visits[b, node] = 0
        tree.parents[b, node] = parent
        tree.action_from_parent[b, node] = action
        tree.node_depth[b, node] = pending.depth[b]
        tree.children_index[b, parent, action] = node
    tree.node_visits[b, node] += 1
    tree.raw_values[b, node] = value[b]
    tree.node_values[b, node] = value[b]
    edge_reward = np.float64(reward[b])
    if params.value_prefix_horizon > 0:
        # EfficientZero: the model predicts the reward summed since the last reset node.
        tree.value_prefix[b, node] = reward[b]
        tree.is_reset[b, node] = pending.is_reset[b]
        if not tree.is_reset[b, parent]:
            edge_reward -= tree.value_prefix[b, parent]
    else:
        tree.value_prefix[b, node] = 0.0
        tree.is_reset[b, node] = False
    tree.children_rewards[b, parent, action] = edge_reward
    tree.children_discounts[b, parent, action] = discount[b]
    _backup(tree, b, node)
    return OK


@numba.njit(cache=True, inline="always")
def _backup(tree, b, leaf):
    """mctx's backward pass: ``G <- r + discount * G`` and running means up to the root; also
    the tree-wide min/max of the backed-up Q values (EfficientZero's ``min_max_stats``)."""
    value = np.float64(tree.node_values[b, leaf])
    index = leaf
    while index != ROOT_INDEX:
        parent = tree.parents[b, index]
        action = tree.action_from_parent[b, index]
        count = tree.node_visits[b, parent]
        value = tree.children_rewards[b, parent, action] + tree.children_discounts[b, parent, action] * value
        tree.node_values[b, parent] = (tree.node_values[b, parent] * np.float64(count) + value) / (count + 1.0)
        tree.node_visits[b, parent] = count + 1
        tree.children_values[b, parent, action] = tree.node_values[b, index]
        tree.children_visits[b, parent, action] += 1
        q = child_qvalue(tree, b, parent, action)
        tree.tree_min_max[b, 0] = min(tree.tree_min_max[b, 0], q)
        tree.tree_min_max[b, 1] = max(tree.tree_min_max[b, 1], q)
        index = parent


@numba.njit(cache=True)
def expand_and_backup_serial(tree, params, sim, pending, reward, discount, logits, value, legal):
    for b in range(pending.parent_index.shape[0]):
        pending.status[b] = _expand_root(tree, b, params, sim, pending, reward, discount, logits, value, legal)


@numba.njit(cache=True, parallel=True)
def expand_and_backup_parallel(tree, params, sim, pending, reward, discount, logits, value, legal):
    for b in numba.prange(pending.parent_index.shape[0]):
        pending.status[b] = _expand_root(tree, b, params, sim, pending, reward, discount, logits, value, legal)


# ----------------------------------------------------------------------------- outputs


@numba.njit(cache=True)
def gumbel_root_outputs(tree, params, completed_qvalues, action):
    """Gumbel MuZero's final choice: among the most visited root actions, the one with the
    largest ``gumbel + logits + sigma(completed Q)``; also returns ``sigma(completed Q)``."""
    for b in range(action.shape[0]):
        transformed_qvalues(tree, b, ROOT_INDEX, params.qtransform, 0.0, completed_qvalues[b])
        most_visits = 0
        for a in range(completed_qvalues.shape[1]):
            most_visits = max(most_visits, tree.children_visits[b, ROOT_INDEX, a])
        action[b] = considered_argmax(tree, b, most_visits, completed_qvalues[b])
