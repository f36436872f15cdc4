"""Random seeded table MDPs used as search models (like `tests.search.golden`, but generated).

A problem is a few tables indexed by ``[state, action]``; its recurrent function maps int32 state
ids ``[B]`` and actions ``[B]`` to a `search.StepOutput` and the next state ids. Being a pure
table, it gives every root the same answers whatever its position in the batch, which the
batch-independence properties rely on.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import search

# Edge discounts drawn per (state, action): single agent, zero-sum turn change, terminal.
DISCOUNT_CHOICES = np.array([0.97, 1.0, -1.0, 0.0], np.float32)
DISCOUNT_PROBS = np.array([0.4, 0.2, 0.3, 0.1])


class TableProblem(NamedTuple):
    """A table MDP and B root states.

    next_state:   ``[S, A]`` int32.
    reward:       ``[S, A]`` float32 in [-1, 1].
    discount:     ``[S, A]`` float32 from `DISCOUNT_CHOICES`.
    prior_logits: ``[S, A]`` float32.
    value:        ``[S]`` float32 in [-1, 1].
    legal:        ``[S, A]`` bool, at least one True per row.
    root_states:  ``[B]`` int32.
    """

    next_state: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    prior_logits: np.ndarray
    value: np.ndarray
    legal: np.ndarray
    root_states: np.ndarray

    @property
    def batch_size(self) -> int:
        return int(self.root_states.shape[0])

    @property
    def num_actions(self) -> int:
        return int(self.next_state.shape[1])

    def with_roots(self, rows) -> TableProblem:
        """The same MDP with roots ``root_states[rows]`` (permute, subset or duplicate)."""
        return self._replace(root_states=self.root_states[np.asarray(rows, np.intp)])


def make_problem(
    seed: int,
    batch_size: int,
    num_actions: int,
    *,
    num_states: int | None = None,
    legal_fraction: float | None = None,
) -> TableProblem:
    """A random table MDP from ``seed``; ``legal_fraction`` (default: drawn) of the actions are
    legal in each state, and always at least one."""
    rng = np.random.default_rng(seed)
    num_states = num_states or max(5, 3 * num_actions)
    shape = (num_states, num_actions)
    if legal_fraction is None:
        legal_fraction = rng.uniform(0.2, 1.0)
    legal = rng.random(shape) < legal_fraction
    legal[np.arange(num_states), rng.integers(0, num_actions, num_states)] = True
    return TableProblem(
        next_state=rng.integers(0, num_states, shape).astype(np.int32),
        reward=rng.uniform(-1.0, 1.0, shape).astype(np.float32),
        discount=rng.choice(DISCOUNT_CHOICES, size=shape, p=DISCOUNT_PROBS).astype(np.float32),
        prior_logits=rng.normal(0.0, 1.5, shape).astype(np.float32),
        value=rng.uniform(-1.0, 1.0, num_states).astype(np.float32),
        legal=legal,
        root_states=rng.integers(0, num_states, batch_size).astype(np.int32),
    )


def root_output(problem: TableProblem, embedding=None) -> search.RootOutput:
    """The roots' `search.RootOutput`; the embedding defaults to the int32 state ids."""
    states = problem.root_states
    if embedding is None:
        embedding = states.copy()
    return search.RootOutput(problem.prior_logits[states], problem.value[states], embedding)


def root_legal_mask(problem: TableProblem) -> np.ndarray:
    """``[B, A]`` bool, the table's legal actions of each root state."""
    return problem.legal[problem.root_states]


def table_recurrent_fn(problem: TableProblem, *, interior_legal: bool = False):
    """``recurrent_fn(state [B] int32, action [B]) -> (StepOutput, next_state [B] int32)``;
    with ``interior_legal`` every new node gets the table's legal mask of its state."""

    def recurrent_fn(state, action):
        state = np.asarray(state)
        next_state = problem.next_state[state, action]
        step = search.StepOutput(
            reward=problem.reward[state, action],
            discount=problem.discount[state, action],
            prior_logits=problem.prior_logits[next_state],
            value=problem.value[next_state],
            legal=problem.legal[next_state] if interior_legal else None,
        )
        return step, next_state

    return recurrent_fn


class GameState(NamedTuple):
    """A Python-object embedding: what a simulator state might look like."""

    state_id: int
    history: tuple


def object_roots(problem: TableProblem) -> list:
    """The roots as a Python ``list`` of `GameState` (object embeddings)."""
    return [GameState(int(s), ()) for s in problem.root_states]


def object_recurrent_fn(problem: TableProblem, *, interior_legal: bool = False):
    """The table MDP over a ``list`` of `GameState`: receives a list, returns a list."""
    table_fn = table_recurrent_fn(problem, interior_legal=interior_legal)

    def recurrent_fn(states, action):
        assert isinstance(states, list), type(states)
        assert isinstance(action, np.ndarray), type(action)
        ids = np.array([state.state_id for state in states], np.int32)
        step, next_ids = table_fn(ids, action)
        next_states = [
            GameState(int(i), (*state.history, int(a)))
            for state, i, a in zip(states, next_ids, action, strict=True)
        ]
        return step, next_states

    return recurrent_fn


def used_nodes(tree: search.Tree) -> np.ndarray:
    """``[B, N + 1]`` bool: the root and every node created by a simulation."""
    used = tree.parents != search.NO_PARENT
    used[:, search.ROOT_INDEX] = True
    return used


def path_actions(tree: search.Tree, b: int, node: int) -> list[int]:
    """The actions from the root of tree ``b`` down to ``node``."""
    actions = []
    while node != search.ROOT_INDEX:
        actions.append(int(tree.action_from_parent[b, node]))
        node = int(tree.parents[b, node])
    return actions[::-1]
