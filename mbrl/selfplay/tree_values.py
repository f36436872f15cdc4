"""Value targets from the search tree's own nodes (TreeStrap, Veness et al. 2009), on every
position the searches have found, not only the positions played.

Self-play trains the value head on the positions it plays, and good play avoids most of a game:
in Pig it stops early, so positions with a high turn total are almost never played, yet the
search reads their values each time it weighs a roll. Measured on Piglet, 97% of the targets
that the self-play trees alone give lie at turn totals 0 and 1. So the targets live in a table
of *positions*, and the learner keeps searching from positions drawn uniformly from it:

- every decision node of a search (self-play's, or the learner's own re-search) is a position
  the table learns of, keyed by its observation;
- a decision node with at least ``min_visits`` visits and *every* legal move tried gives its
  position the target ``V(s)``, the tree's expectimax value from the player to move's point of
  view (as every value in the tree): at such a node ``V(s) = max_a r(s, a) + d(s, a) V(child)``,
  at a chance node the expectation of its outcomes under the chance probabilities, and at any
  other node (a leaf, or a node with a move untried) the network's own value. With the true
  chance model the unexpanded outcomes are in that expectation too (the afterstate's raw value
  is exact given the network), so the target carries none of a game's dice noise. A position
  keeps its latest target. Two shortcuts were measured on Piglet and rejected:
  - the tree's *mean* backed-up values (MCTS's Q) average in the moves the search tried and
    rejected, so they sit below the best play: 0.2 below the exact value at (8, 9, 0), while
    the one-step backup of the same network's values was within 0.05;
  - the max over only the moves *tried* is a lower bound that confirms itself: where the prior
    prefers the wrong move, the search tries only that one, and the value head learns the
    policy's mistake (0.46 below the exact value at (7, 9, 2), where only stopping was tried);
- the learner trains on positions with a target, each equally often, and re-searches positions
  drawn equally often (`mbrl.selfplay.embedded`): the search from a rare position finds the
  positions one step further, so the table spreads over the game, as value iteration would.

`tree_node_values` reads the nodes and targets off a `search.tree.Tree`; `PositionTable` holds
them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from search.tree import NO_PARENT, ROOT_INDEX, Tree


class TreeNodes(NamedTuple):
    """The positions of a batch of searches, for a `PositionTable`."""

    obs: np.ndarray  # [M, *obs_shape]
    states: list  # [M] the game's own states (the model's embeddings)
    value: np.ndarray  # [M] float32 targets, NaN where the node gives none


def tree_node_values(
    tree: Tree, is_decision: np.ndarray | None, num_actions: int, min_visits: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(roots [M], nodes [M], targets [M] float32)`` for every used decision node of B trees:
    the expectimax value `expectimax_values` gives where the node has at least ``min_visits``
    visits and every legal move (of the first ``num_actions`` slots) tried, NaN elsewhere.

    ``is_decision`` ``[B, N + 1]`` bool marks the decision nodes of a Stochastic MuZero tree
    (`search.StochasticEmbeddings.is_decision_node`); None: every node is one."""
    used = _used_nodes(tree)
    if is_decision is None:
        is_decision = np.ones_like(used)
    full = _all_moves_tried(tree, num_actions) & used
    values = expectimax_values(tree, is_decision, full, used)
    roots, nodes = np.nonzero(used & is_decision)
    valued = full[roots, nodes] & (tree.node_visits[roots, nodes] >= min_visits)
    return roots, nodes, np.where(valued, values[roots, nodes], np.nan).astype(np.float32)


def _used_nodes(tree: Tree) -> np.ndarray:
    """``[B, N + 1]`` bool: the node is in the tree (the other slots are cleared, no parent)."""
    used = tree.parents != NO_PARENT
    used[:, ROOT_INDEX] = True
    return used


def _all_moves_tried(tree: Tree, num_actions: int) -> np.ndarray:
    """``[B, N + 1]`` bool: the node has a legal move and has tried every one."""
    legal = tree.children_legal[:, :, :num_actions]
    tried = tree.children_index[:, :, :num_actions] >= 0
    return legal.any(-1) & ~(legal & ~tried).any(-1)


def expectimax_values(
    tree: Tree, is_decision: np.ndarray, full: np.ndarray, used: np.ndarray
) -> np.ndarray:
    """``[B, N + 1]`` float64: each used node's value with the best move taken wherever the
    tree has tried them all (``full``), the network's raw value at the other decision nodes,
    and at a chance node its raw value corrected by what the tree learned below each visited
    outcome, ``raw + sum_c p(c) d_c (V(child_c) - raw(child_c))`` (exact where the raw value is
    the expectation over outcomes, as with the true chance model). Children are created after
    their parents, so one sweep from the last node to the root sees every child first.
    ``used`` (`_used_nodes`) marks the nodes in the tree; the other slots hold 0."""
    raw = np.where(used, tree.raw_values, 0.0)
    values = raw.copy()
    rows = np.arange(values.shape[0])[:, None]
    probs = tree.children_prior_probs.astype(np.float64)
    for node in range(values.shape[1] - 1, -1, -1):
        index = tree.children_index[:, node]  # [B, A]
        expanded = (index >= 0) & used[:, node, None]
        child = np.where(expanded, index, 0)
        below = values[rows, child]
        discount = np.where(expanded, tree.children_discounts[:, node], 0.0)
        q = np.where(expanded, tree.children_rewards[:, node], 0.0) + discount * below
        best = np.where(expanded & tree.children_legal[:, node], q, -np.inf).max(-1)
        learned = (
            np.where(expanded, probs[:, node], 0.0) * discount * (below - raw[rows, child])
        ).sum(-1)
        decision = is_decision[:, node]
        values[:, node] = np.where(
            decision,
            np.where(full[:, node], best, values[:, node]),
            values[:, node] + learned,
        )
    return values


class PositionTable:
    """Up to ``capacity`` distinct positions (observation, game state, latest target or NaN),
    keyed by the observation's bytes; a new position evicts the one found longest ago.

    ``replay_history(history) -> state`` rebuilds a game state from ``state.history()`` (game
    states do not pickle: a checkpoint stores their histories)."""

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        replay_history: Callable[[list[int]], Any],
        obs_dtype=np.float32,
    ):
        if capacity < 1:
            raise ValueError(f"the position table needs a capacity >= 1, got {capacity}")
        self.capacity = capacity
        self.replay_history = replay_history
        self.obs = np.zeros((capacity, *obs_shape), obs_dtype)
        self.value = np.full(capacity, np.nan, np.float32)
        self.states: list[Any] = [None] * capacity
        self.keys: list[bytes | None] = [None] * capacity
        self._clear()

    def _clear(self) -> None:
        self.value[:] = np.nan
        self.states[:] = [None] * self.capacity
        self.keys[:] = [None] * self.capacity
        self.slot_of: dict[bytes, int] = {}
        self.size = 0
        self.cursor = 0  # the next slot a new position takes
        self.targets_added = 0  # over the whole run

    def __len__(self) -> int:
        return self.size

    @property
    def valued(self) -> int:
        """How many positions hold a target."""
        return int(np.isfinite(self.value[: self.size]).sum())

    def add(self, nodes: TreeNodes) -> None:
        for obs, state, value in zip(nodes.obs, nodes.states, nodes.value.tolist(), strict=True):
            key = obs.tobytes()
            slot = self.slot_of.get(key)
            if slot is None:
                slot = self._new_slot(key, obs, state)
            if not np.isnan(value):
                self.value[slot] = value
                self.targets_added += 1

    def _new_slot(self, key: bytes, obs: np.ndarray, state) -> int:
        slot = self.cursor
        evicted = self.keys[slot]
        if evicted is not None:
            del self.slot_of[evicted]
        self.keys[slot], self.slot_of[key] = key, slot
        self.obs[slot], self.states[slot], self.value[slot] = obs, state, np.nan
        self.cursor = (slot + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        return slot

    def sample_targets(self, count: int, rng: np.random.Generator):
        """``(obs [count, ...], value [count])``: positions with a target, equally likely."""
        slots = np.flatnonzero(np.isfinite(self.value[: self.size]))
        if not len(slots):
            raise ValueError("the position table holds no target yet")
        slots = slots[rng.integers(0, len(slots), size=count)]
        return self.obs[slots], self.value[slots]

    def sample_states(self, count: int, rng: np.random.Generator) -> list:
        """``count`` positions' game states, equally likely."""
        return [self.states[slot] for slot in rng.integers(0, self.size, size=count).tolist()]

    # -- checkpointing ----------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """The positions oldest first, their states as histories."""
        order = (self.cursor - self.size + np.arange(self.size)) % self.capacity
        return {
            "obs": torch.from_numpy(self.obs[order]),
            "value": torch.from_numpy(self.value[order]),
            "histories": [list(self.states[slot].history()) for slot in order.tolist()],
            "targets_added": self.targets_added,
        }

    def load_state_dict(self, state: dict) -> None:
        """The newest positions of ``state`` that fit this table."""
        obs, value, histories = state["obs"].numpy(), state["value"].numpy(), state["histories"]
        if obs.shape[1:] != self.obs.shape[1:] or not len(obs) == len(value) == len(histories):
            raise ValueError(
                f"the checkpoint's position table holds {len(obs)} observations of shape "
                f"{tuple(obs.shape[1:])}, {len(value)} values and {len(histories)} histories; "
                f"this run's observations are {tuple(self.obs.shape[1:])}"
            )
        if np.isinf(value).any():
            raise ValueError(
                "the checkpoint's position table holds infinite targets (finite, or NaN for "
                "none): it is corrupt"
            )
        keep = range(max(len(value) - self.capacity, 0), len(value))
        states = []
        for row in keep:
            try:
                states.append(self.replay_history(histories[row]))
            except ValueError as error:
                raise ValueError(
                    f"the checkpoint's position table: position {row} {error}; the checkpoint "
                    "is corrupt or from another game"
                ) from None
        self._clear()
        rows = np.asarray(keep, np.int64)
        self.add(TreeNodes(obs[rows], states, value[rows]))
        self.targets_added = int(state["targets_added"])
