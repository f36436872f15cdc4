"""The search tree: a NamedTuple of preallocated numpy arrays (mctx layout and names).

``node_*`` fields are ``[B, N + 1]`` and ``children_*`` fields are ``[B, N + 1, A]``. Node ``i + 1``
is created by simulation ``i``; node 0 is the root.

Storage is node-major: everything a selection step reads about one node's children lies in one
contiguous block (``children_stats[b, node]``, ``[5, A]`` float32, and ``children_counts[b, node]``,
``[3, A]`` int32), so a descent touches a few adjacent cache lines per level instead of one line
in each of seven ``[B, N + 1, A]`` arrays. The familiar ``children_*`` fields are strided views of
those blocks. Kernels read the blocks with the field constants below. Rows are written when a
node is created, so allocation never pays for zeroing ``[B, N + 1, A]`` buffers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

ROOT_INDEX = 0
NO_PARENT = -1
UNVISITED = -1

# Rows of `Tree.children_stats` (float32).
PRIOR_LOGITS = 0
PRIOR_PROBS = 1
VALUES = 2
REWARDS = 3
DISCOUNTS = 4
NUM_STATS = 5
# Rows of `Tree.children_counts` (int32).
INDEX = 0
VISITS = 1
# The node's visited children in the order they were created, then UNVISITED: the rules that
# only need visited children (Gumbel's completed Q) loop over these instead of all A actions.
ORDER = 2
NUM_COUNTS = 3


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
    children_stats:      ``[B, N+1, 5, A]`` float32 storage (rows `PRIOR_LOGITS` ... `DISCOUNTS`).
    children_counts:     ``[B, N+1, 3, A]`` int32 storage (rows `INDEX`, `VISITS`, `ORDER`).
    children_legal:      ``[B, N+1, A]`` bool, True = legal.
    root_gumbel:         ``[B, A]`` float32, Gumbel noise of the root (Gumbel MuZero).
    tree_min_max:        ``[B, 2]`` float32, tree-wide (min, max) of backed-up Q values
                         (EfficientZero/LightZero normalisation).
    prior_probs_ready:   ``[B, N+1]`` bool, the kernels have filled the node's `PRIOR_PROBS`
                         row (they do so when a simulation first passes through the node).

    Views (properties): ``children_index``, ``children_visits`` (int32) and
    ``children_prior_logits`` (illegal at float32 min), ``children_values``,
    ``children_rewards``, ``children_discounts`` (float32), all ``[B, N+1, A]``.
    ``children_prior_probs`` (float32 ``[B, N+1, A]``) is computed from the logits, since the
    kernels never fill the `PRIOR_PROBS` rows of leaves.
    """

    node_visits: np.ndarray
    raw_values: np.ndarray
    node_values: np.ndarray
    parents: np.ndarray
    action_from_parent: np.ndarray
    node_depth: np.ndarray
    value_prefix: np.ndarray
    is_reset: np.ndarray
    children_stats: np.ndarray
    children_counts: np.ndarray
    children_legal: np.ndarray
    root_gumbel: np.ndarray
    tree_min_max: np.ndarray
    prior_probs_ready: np.ndarray

    @property
    def children_index(self) -> np.ndarray:
        return self.children_counts[:, :, INDEX]

    @property
    def children_visits(self) -> np.ndarray:
        return self.children_counts[:, :, VISITS]

    @property
    def children_prior_logits(self) -> np.ndarray:
        return self.children_stats[:, :, PRIOR_LOGITS]

    @property
    def children_prior_probs(self) -> np.ndarray:
        """Softmax of ``children_prior_logits`` over the legal actions (0 for unused nodes)."""
        weights = np.where(
            self.children_legal, np.exp(self.children_prior_logits.astype(np.float64)), 0.0
        )
        total = weights.sum(axis=-1, keepdims=True)
        return (weights / np.where(total > 0, total, 1.0)).astype(np.float32)

    @property
    def children_values(self) -> np.ndarray:
        return self.children_stats[:, :, VALUES]

    @property
    def children_rewards(self) -> np.ndarray:
        return self.children_stats[:, :, REWARDS]

    @property
    def children_discounts(self) -> np.ndarray:
        return self.children_stats[:, :, DISCOUNTS]


def allocate_tree(
    batch_size: int, num_simulations: int, num_actions: int, root_gumbel: np.ndarray | None = None
) -> Tree:
    """Uninitialised storage; `search.kernels.init_roots` writes the roots. ``root_gumbel``
    (``[B, A]`` float32, kept as the tree's own) defaults to zeros."""
    node_shape = (batch_size, num_simulations + 1)
    if root_gumbel is None:
        root_gumbel = np.zeros((batch_size, num_actions), np.float32)
    return Tree(
        node_visits=np.empty(node_shape, np.int32),
        raw_values=np.empty(node_shape, np.float32),
        node_values=np.empty(node_shape, np.float32),
        parents=np.empty(node_shape, np.int32),
        action_from_parent=np.empty(node_shape, np.int32),
        node_depth=np.empty(node_shape, np.int32),
        value_prefix=np.empty(node_shape, np.float32),
        is_reset=np.empty(node_shape, np.bool_),
        children_stats=np.empty((*node_shape, NUM_STATS, num_actions), np.float32),
        children_counts=np.empty((*node_shape, NUM_COUNTS, num_actions), np.int32),
        children_legal=np.empty((*node_shape, num_actions), np.bool_),
        root_gumbel=root_gumbel,
        tree_min_max=np.empty((batch_size, 2), np.float32),
        prior_probs_ready=np.empty(node_shape, np.bool_),
    )


def tree_depths(tree: Tree) -> np.ndarray:
    """``[B]`` float mean depth of the used non-root nodes of each tree."""
    used = tree.parents != NO_PARENT
    depth_sum = np.where(used, tree.node_depth, 0).sum(axis=1)
    return depth_sum / np.maximum(used.sum(axis=1), 1)
