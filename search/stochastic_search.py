"""The Stochastic MuZero search loop: one descent kernel, one call of each model function that
some root needs, one expand-and-backup kernel per simulation.

mctx's ``stochastic_muzero_policy`` calls *both* model functions on every root at every
simulation and keeps, per root, the output that matches the kind of node being expanded. Here
the descent says which function each root needs (`search.stochastic_kernels`), and each function
is called once, on its subset of roots only (and skipped when no root needs it):

* a leaf under a **decision** node is an afterstate: ``decision_fn(state_embedding [K, ...],
  action [K]) -> (AfterstateOutput, afterstate_embedding [K, ...])``;
* a leaf under a **chance** node is a state: ``chance_fn(afterstate_embedding [K, ...], code [K])
  -> (StepOutput, state_embedding [K, ...])`` (the dynamics and prediction functions).

The trees are the same as mctx's, since mctx only ever uses the matching output. The two
outputs are padded into one ``[B, A + C]`` batch (`LeafOutputs`) for the deterministic search's
expand-and-backup kernel; state and afterstate embeddings live in two node-indexed stores.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from search import kernels, stochastic_kernels
from search.embeddings import make_embedding_store
from search.records import AfterstateOutput, StepOutput, StochasticEmbeddings
from search.search import (
    _STATUS_MESSAGES,
    PARALLEL_MIN_BATCH,
    _entry_point,
    _step_arrays,
    call,
    raise_bad_roots,
)
from search.seq_halving import considered_visit_table
from search.tree import PRIOR_LOGITS, PRIOR_PROBS, ROOT_INDEX, Tree, allocate_tree
from search.validation import float_array

_FLOAT32_MIN = np.float32(np.finfo(np.float32).min)


class LeafOutputs(NamedTuple):
    """The model's outputs for the nodes of one simulation, one row per root, padded to the
    tree's ``W = A + C`` slots as `search.kernels.expand_and_backup_serial` takes them.

    reward, discount, value: ``[B]`` float32 (a decision edge has reward 0 and discount 1).
    logits: ``[B, W]`` float32; legal: ``[B, W]`` bool (a node's own slots are legal: actions
        ``[0, A)`` at a state, codes ``[A, W)`` at an afterstate).
    """

    reward: np.ndarray
    discount: np.ndarray
    logits: np.ndarray
    value: np.ndarray
    legal: np.ndarray


def allocate_leaf_outputs(batch_size: int, width: int) -> LeafOutputs:
    return LeafOutputs(
        reward=np.zeros(batch_size, np.float32),
        discount=np.ones(batch_size, np.float32),
        logits=np.zeros((batch_size, width), np.float32),
        value=np.zeros(batch_size, np.float32),
        legal=np.zeros((batch_size, width), np.bool_),
    )


def run_stochastic_search(
    *,
    roots: kernels.Roots,
    embedding: Any,
    decision_fn: Callable,
    chance_fn: Callable,
    num_simulations: int,
    num_chance_outcomes: int,
    params: kernels.KernelParams,
    root_gumbel: np.ndarray | None = None,
) -> tuple[Tree, StochasticEmbeddings, kernels.RootResults]:
    """Builds B trees ``A + C`` slots wide; returns ``(tree, embeddings, root results)``.

    ``roots`` (`search.kernels.make_roots`) are ``A`` wide; the chance slots of the root are
    padded here. ``root_gumbel`` ``[B, A]`` float32 (Gumbel MuZero) is kept by the tree."""
    batch_size, num_actions = roots.prior_logits.shape
    tree, node_is_decision = _init_trees(roots, num_simulations, num_chance_outcomes, root_gumbel)
    states = make_embedding_store(embedding, num_simulations)
    if states.batch_size != batch_size:
        raise ValueError(
            f"root embedding has batch size {states.batch_size}; prior_logits has {batch_size}"
        )
    loop = _Loop(decision_fn, chance_fn, states, num_simulations, num_actions, num_chance_outcomes)
    pending = kernels.allocate_pending(np.empty(batch_size, np.int32))
    expands_afterstate = np.zeros(batch_size, np.bool_)
    leaves = allocate_leaf_outputs(batch_size, num_actions + num_chance_outcomes)
    table = considered_visit_table(max(roots.max_considered, 1), num_simulations)
    scratch = np.empty((batch_size, num_actions), np.float64)
    simulate_args = (table, roots.num_considered, pending, expands_afterstate, scratch)
    simulate, expand_and_backup = _drivers(batch_size)
    simulate = _entry_point(simulate, tree, node_is_decision, params, 0, *simulate_args)
    expand_and_backup = _entry_point(expand_and_backup, tree, params, 0, pending, *leaves)
    for sim in range(num_simulations):
        simulate(tree, node_is_decision, params, sim, *simulate_args)
        to_afterstate = np.flatnonzero(expands_afterstate)
        to_state = np.flatnonzero(~expands_afterstate)
        if to_afterstate.size:
            loop.expand_afterstates(to_afterstate, pending, leaves)
        if to_state.size:
            loop.expand_states(to_state, pending, leaves, sim)
        if expand_and_backup(tree, params, sim, pending, *leaves):  # count of refused roots
            _raise_bad_leaf(pending.status, expands_afterstate, sim)
        node_is_decision[to_state, pending.node_index[to_state]] = True
    gumbel = params.policy == kernels.POLICY_GUMBEL
    results = kernels.allocate_root_results(batch_size, num_actions, gumbel)
    call(kernels.root_results, tree, params, results)
    afterstates = None if loop.afterstates is None else loop.afterstates.storage
    return tree, StochasticEmbeddings(states.storage, afterstates, node_is_decision), results


def _init_trees(roots, num_simulations, num_chance_outcomes, root_gumbel):
    """``(tree, node_is_decision [B, N+1] bool)`` with the roots written: decision nodes."""
    batch_size, num_actions = roots.prior_logits.shape
    width = num_actions + num_chance_outcomes
    tree = allocate_tree(batch_size, num_simulations, width)
    if root_gumbel is not None:  # the rules read it over the A actions only
        tree = tree._replace(root_gumbel=root_gumbel)
    status = np.empty(batch_size, np.int32)
    call(kernels.init_roots, tree, roots, np.empty((batch_size, num_actions)), status)
    if status.any():
        raise_bad_roots(roots)
    _pad_root(tree, num_actions)
    node_is_decision = np.zeros(tree.node_visits.shape, np.bool_)
    node_is_decision[:, ROOT_INDEX] = True
    return tree, node_is_decision


def _drivers(batch_size: int):
    """The ``(simulate, expand_and_backup)`` kernels: ``prange`` ones for large batches."""
    if batch_size >= PARALLEL_MIN_BATCH:
        return stochastic_kernels.simulate_parallel, kernels.expand_and_backup_parallel
    return stochastic_kernels.simulate_serial, kernels.expand_and_backup_serial


def _pad_root(tree: Tree, num_actions: int) -> None:
    """`search.kernels.init_roots` writes the ``A`` action slots of an ``A``-wide root; the
    chance slots of a decision node are illegal (probability 0, never selected)."""
    tree.children_legal[:, ROOT_INDEX, num_actions:] = False
    tree.children_stats[:, ROOT_INDEX, PRIOR_LOGITS, num_actions:] = _FLOAT32_MIN
    tree.children_stats[:, ROOT_INDEX, PRIOR_PROBS, num_actions:] = 0.0


class _Loop:
    """The model calls of the search and the two embedding stores they read and write."""

    def __init__(self, decision_fn, chance_fn, states, num_simulations, num_actions, num_codes):
        self.decision_fn = decision_fn
        self.chance_fn = chance_fn
        self.states = states
        self.states.producer = "chance_fn"
        self.afterstates = None  # allocated from the first afterstates (simulation 0: all roots)
        self.num_simulations = num_simulations
        self.num_actions = num_actions
        self.num_codes = num_codes
        self.all_legal = np.ones((states.batch_size, num_actions), np.bool_)

    def expand_afterstates(self, rows: np.ndarray, pending, leaves: LeafOutputs) -> None:
        """``decision_fn`` on the roots ``rows`` ``[K]``, whose new node is a chance node."""
        parents, nodes = pending.parent_index[rows], pending.node_index[rows]
        embedding = self.states.gather(parents, rows)
        actions = self.states.actions(pending.action[rows])
        output, afterstate = _unpack(self.decision_fn(embedding, actions), "decision_fn")
        if self.afterstates is None:
            self.afterstates = make_embedding_store(afterstate, self.num_simulations)
            self.afterstates.producer = "decision_fn"
            if self.afterstates.batch_size != len(rows):
                raise ValueError(
                    f"decision_fn returned afterstate embeddings for "
                    f"{self.afterstates.batch_size} roots; expected {len(rows)}"
                )
        self.afterstates.scatter(nodes, afterstate, rows)
        count = len(rows)
        value = float_array(output.value, "AfterstateOutput.value", (count,), check_finite=False)
        chance_logits = float_array(
            output.chance_logits,
            "AfterstateOutput.chance_logits",
            (count, self.num_codes),
            check_finite=False,
        )
        A = self.num_actions
        leaves.reward[rows] = 0.0
        leaves.discount[rows] = 1.0
        leaves.value[rows] = value
        leaves.logits[rows, :A] = 0.0
        leaves.logits[rows, A:] = chance_logits
        leaves.legal[rows, :A] = False
        leaves.legal[rows, A:] = True

    def expand_states(self, rows: np.ndarray, pending, leaves: LeafOutputs, sim: int) -> None:
        """``chance_fn`` on the roots ``rows`` ``[K]``, whose new node is a decision node."""
        parents, nodes = pending.parent_index[rows], pending.node_index[rows]
        embedding = self.afterstates.gather(parents, rows)
        codes = self.afterstates.actions(pending.action[rows] - self.num_actions)
        step, state = _unpack(self.chance_fn(embedding, codes), "chance_fn")
        self.states.scatter(nodes, state, rows)
        count = len(rows)
        reward, discount, logits, value, legal = _step_arrays(
            step, count, self.num_actions, self.all_legal[:count], sim
        )
        A = self.num_actions
        leaves.reward[rows] = reward
        leaves.discount[rows] = discount
        leaves.value[rows] = value
        leaves.logits[rows, :A] = logits
        leaves.logits[rows, A:] = 0.0
        leaves.legal[rows, :A] = legal
        leaves.legal[rows, A:] = False


_RECORDS = {"decision_fn": AfterstateOutput, "chance_fn": StepOutput}


def _unpack(result: Any, function: str) -> tuple[Any, Any]:
    record = _RECORDS[function]
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], record)):
        raise TypeError(
            f"{function} must return a pair (search.{record.__name__}, new_embedding); got "
            f"{type(result).__name__}"
        )
    return result


def _raise_bad_leaf(status: np.ndarray, expands_afterstate: np.ndarray, sim: int) -> None:
    roots = np.nonzero(status)[0]
    first = roots[0]
    roots = roots[expands_afterstate[roots] == expands_afterstate[first]]  # one function's
    function = "decision_fn" if expands_afterstate[first] else "chance_fn"
    raise ValueError(
        f"{function} returned {_STATUS_MESSAGES[int(status[first])]} at simulation {sim} for "
        f"roots {roots[:10].tolist()}; values, rewards and discounts must be finite, logits must "
        "not be NaN or +inf, and every node needs a legal action with a finite logit"
    )
