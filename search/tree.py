"""The search tree: a NamedTuple of preallocated numpy arrays (mctx layout).

``node_*`` fields are ``[B, N + 1]`` and ``children_*`` fields are ``[B, N + 1, A]``. Node ``i + 1``
is created by simulation ``i``; node 0 is the root. Helpers are free functions because methods do
not compile in numba. Rows of node slots are written when the node is created, so allocation
does not pay for zeroing ``[B, N + 1, A]`` buffers; unused slots are cleared at the end.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

ROOT_INDEX = 0
NO_PARENT = -1
UNVISITED = -1


class Tree(NamedTuple):
    """State of B search trees.

    node_visits:         ``[B, N+1]`` int32, visits (the root starts at 1, as in mctx).
    raw_values:          ``[B, N+1]`` float32, the model's value of each node.
    node_values:         ``[B, N+1]`` float32, mean backed-up value (player-to-move view).
    parents:             ``[B, N+1]`` int32, parent node, ``NO_PARENT`` for the root/unused.
    action_from_parent:  ``[B, N+1]`` int32, edge into the node, ``NO_PARENT`` for root/unused.
    node_depth:          ``[B, N+1]`` int32, edges from the root.
    value_prefix:        ``[B, N+1]`` float32, EfficientZero value prefix (0 otherwise).
    is_reset:            ``[B, N+1]`` bool, the node starts a new value-prefix horizon.
    children_index:      ``[B, N+1, A]`` int32, child node id or ``UNVISITED``.
    children_prior_logits: ``[B, N+1, A]`` float32, logits, illegal ones at float32 min.
    children_prior_probs:  ``[B, N+1, A]`` float32, softmax of the logits (cached).
    children_visits:     ``[B, N+1, A]`` int32.
    children_values:     ``[B, N+1, A]`` float32, ``node_values`` of the child.
    children_rewards:    ``[B, N+1, A]`` float32, edge rewards.
    children_discounts:  ``[B, N+1, A]`` float32, edge discounts.
    children_legal:      ``[B, N+1, A]`` bool, True = legal.
    root_gumbel:         ``[B, A]`` float32, Gumbel noise of the root (Gumbel MuZero).
    tree_min_max:        ``[B, 2]`` float32, tree-wide (min, max) of backed-up Q values
                         (EfficientZero/LightZero normalisation).
    """

    node_visits: np.ndarray
    raw_values: np.ndarray
    node_values: np.ndarray
    parents: np.ndarray
    action_from_parent: np.ndarray
    node_depth: np.ndarray
    value_prefix: np.ndarray
    is_reset: np.ndarray
    children_index: np.ndarray
    children_prior_logits: np.ndarray
    children_prior_probs: np.ndarray
    children_visits: np.ndarray
    children_values: np.ndarray
    children_rewards: np.ndarray
    children_discounts: np.ndarray
    children_legal: np.ndarray
    root_gumbel: np.ndarray
    tree_min_max: np.ndarray


def allocate_tree(batch_size: int, num_simulations: int, num_actions: int) -> Tree:
    """Uninitialised storage; `search.kernels.init_roots` writes the roots."""
    node_shape = (batch_size, num_simulations + 1)
    children_shape = (*node_shape, num_actions)
    return Tree(
        node_visits=np.empty(node_shape, np.int32),
        raw_values=np.empty(node_shape, np.float32),
        node_values=np.empty(node_shape, np.float32),
        parents=np.empty(node_shape, np.int32),
        action_from_parent=np.empty(node_shape, np.int32),
        node_depth=np.empty(node_shape, np.int32),
        value_prefix=np.empty(node_shape, np.float32),
        is_reset=np.empty(node_shape, np.bool_),
        children_index=np.empty(children_shape, np.int32),
        children_prior_logits=np.empty(children_shape, np.float32),
        children_prior_probs=np.empty(children_shape, np.float32),
        children_visits=np.empty(children_shape, np.int32),
        children_values=np.empty(children_shape, np.float32),
        children_rewards=np.empty(children_shape, np.float32),
        children_discounts=np.empty(children_shape, np.float32),
        children_legal=np.empty(children_shape, np.bool_),
        root_gumbel=np.zeros((batch_size, num_actions), np.float32),
        tree_min_max=np.empty((batch_size, 2), np.float32),
    )


@numba.njit(cache=True, inline="always")
def child_qvalue(tree, b, node, a):
    """``reward + discount * value`` of edge ``a`` of ``node`` (0 for an unvisited edge)."""
    return tree.children_rewards[b, node, a] + tree.children_discounts[b, node, a] * np.float64(
        tree.children_values[b, node, a]
    )


def num_actions(tree: Tree) -> int:
    return tree.children_index.shape[-1]


def num_simulations(tree: Tree) -> int:
    return tree.node_visits.shape[-1] - 1


def root_qvalues(tree: Tree) -> np.ndarray:
    """``[B, A]`` Q values of the root's children (0 where unvisited), as mctx's summary."""
    rewards = tree.children_rewards[:, ROOT_INDEX]
    discounts = tree.children_discounts[:, ROOT_INDEX]
    values = tree.children_values[:, ROOT_INDEX]
    return (rewards + discounts * values).astype(np.float32)


def tree_depths(tree: Tree) -> np.ndarray:
    """``[B]`` float mean depth of the used non-root nodes of each tree."""
    used = tree.parents != NO_PARENT
    depth_sum = np.where(used, tree.node_depth, 0).sum(axis=1)
    return depth_sum / np.maximum(used.sum(axis=1), 1)
