"""Small typed records at the model seam and the search output.

Shapes: ``B`` roots, ``A`` actions, ``N`` simulations (the tree has ``N + 1`` node slots).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from search.tree import Tree


class RootOutput(NamedTuple):
    """What the model says about the roots.

    prior_logits: ``[B, A]`` float, policy logits.
    value: ``[B]`` float, value estimate from the perspective of the player to move.
    embedding: the root states the recurrent function continues from: a torch tensor or numpy
        array ``[B, ...]``, a tuple/dict of those, or a Python ``list`` of B objects
        (e.g. simulator states for AlphaZero). The search stores one per node.
    """

    prior_logits: Any
    value: Any
    embedding: Any


class StepOutput(NamedTuple):
    """What the model says about the nodes created by one simulation (one per root).

    reward: ``[B]`` reward of the edge; in value-prefix mode the node's value prefix (the
        reward accumulated since the last reset, EfficientZero).
    discount: ``[B]`` edge discount: ``gamma`` (single agent), ``-1`` (the player to move
        changes, zero-sum) or ``0`` (the edge enters a terminal state).
    prior_logits: ``[B, A]`` policy logits at the new node.
    value: ``[B]`` value of the new node, from the perspective of its player to move.
    legal: optional ``[B, A]`` bool, True = legal at the new node (interior masking, e.g. when
        the true rules are known). ``None`` = every action is legal.
    """

    reward: Any
    discount: Any
    prior_logits: Any
    value: Any
    legal: Any = None


class AfterstateOutput(NamedTuple):
    """What the model says about the afterstates created by one simulation (Stochastic MuZero's
    decision function: a state and an action lead to an afterstate, before chance acts).

    value: ``[K]`` value of the afterstate, from the perspective of the player who just acted
        (the edge into it has reward 0 and discount 1).
    chance_logits: ``[K, C]`` logits of the C chance outcomes (codes) at the afterstate.
    """

    value: Any
    chance_logits: Any


class ChanceModel(NamedTuple):
    """A model with chance nodes, as `search.run` takes it in place of a ``recurrent_fn``: the
    two functions of `search.stochastic_muzero_policy` and the number of chance codes C."""

    decision_fn: Any
    chance_fn: Any
    num_chance_outcomes: int


class StochasticEmbeddings(NamedTuple):
    """The node-indexed embeddings of a Stochastic MuZero search (mctx's
    ``StochasticRecurrentState``).

    state: the state embeddings, leaves ``[B, N + 1, ...]`` (or per-root lists), meaningful at
        decision nodes.
    afterstate: the afterstate embeddings, meaningful at chance nodes (the root's slot holds no
        afterstate: unlike mctx, the search makes no extra model call to fill it).
    is_decision_node: ``[B, N + 1]`` bool, True for the root and every state node, False for
        afterstates and unused slots.
    """

    state: Any
    afterstate: Any
    is_decision_node: np.ndarray


class SearchOutput(NamedTuple):
    """Result of a batched search.

    action: ``[B]`` int32, the action to play.
    action_weights: ``[B, A]`` float32, the policy training target (visit distribution for
        PUCT, the improved policy ``softmax(logits + sigma(completed Q))`` for Gumbel).
    root_value: ``[B]`` float32, the search value of the root.
    visit_counts: ``[B, A]`` int32, visits of the root's children.
    qvalues: ``[B, A]`` float32, ``reward + discount * value`` of the root's children (0 if
        unvisited), from the perspective of the player to move at the root.
    tree: the whole search tree (`search.tree.Tree`).
    embeddings: the node-indexed embedding store (``[B, N + 1, ...]`` for arrays).
    """

    action: np.ndarray
    action_weights: np.ndarray
    root_value: np.ndarray
    visit_counts: np.ndarray
    qvalues: np.ndarray
    tree: Tree
    embeddings: Any
