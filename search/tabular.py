"""Known finite MDPs as tables: the model runs inside the kernels, with no Python per simulation.

Useful for planning in small known MDPs, for tests, and to measure the tree alone (mctx jits its
table models the same way). Root embeddings are int state ids ``[B]``; the search's embeddings
output holds the state id of every node ``[B, N + 1]``.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from search import kernels
from search.borrow import borrow
from search.validation import float_array, legal_mask_array


class TabularModel(NamedTuple):
    """``S`` states, ``A`` actions; build with `tabular_model` (it validates and converts).

    next_state: ``[S, A]`` int32 successor of each edge.
    reward: ``[S, A]`` float32 edge rewards.
    discount: ``[S, A]`` float32 edge discounts (``-1`` two-player, ``0`` terminal).
    prior_logits: ``[S, A]`` float32 policy logits of each state.
    value: ``[S]`` float32 value of each state.
    legal: ``[S, A]`` bool, True = legal in that state.
    """

    next_state: np.ndarray
    reward: np.ndarray
    discount: np.ndarray
    prior_logits: np.ndarray
    value: np.ndarray
    legal: np.ndarray


def tabular_model(next_state, reward, discount, prior_logits, value, legal=None) -> TabularModel:
    """A `TabularModel` from array-likes, with errors naming the bad argument."""
    next_state = np.asarray(next_state)
    if next_state.ndim != 2 or not np.issubdtype(next_state.dtype, np.integer):
        raise ValueError(
            f"next_state must be an integer array [S, A]; got {next_state.dtype} {next_state.shape}"
        )
    num_states, num_actions = next_state.shape
    if next_state.size and (next_state.min() < 0 or next_state.max() >= num_states):
        raise ValueError(
            f"next_state entries must be state ids in [0, {num_states}); got {next_state.min()}..{next_state.max()}"
        )
    shape = (num_states, num_actions)
    if legal is None:
        legal = np.ones(shape, np.bool_)
    return TabularModel(
        next_state=np.ascontiguousarray(next_state, dtype=np.int32),
        reward=float_array(reward, "reward", shape),
        discount=float_array(discount, "discount", shape),
        prior_logits=float_array(prior_logits, "prior_logits", shape),
        value=float_array(value, "value", (num_states,)),
        legal=legal_mask_array(legal, "legal", shape),
    )


def root_state_ids(embedding, batch_size: int) -> np.ndarray:
    """Root state ids ``[B]`` int64 (their range is checked in the kernel: `BAD_ROOT_STATE`)."""
    states = embedding if type(embedding) is np.ndarray else np.asarray(embedding)
    if states.shape != (batch_size,) or not np.issubdtype(states.dtype, np.integer):
        raise ValueError(
            f"with a TabularModel the root embedding must be integer state ids of shape ({batch_size},); "
            f"got {states.dtype} {states.shape}"
        )
    return np.ascontiguousarray(states, np.int64)  # int64: no id can wrap around unnoticed


def raise_bad_root_state(ids: np.ndarray, model: TabularModel) -> None:
    num_states = model.value.shape[0]
    raise ValueError(f"root state ids must be in [0, {num_states}); got {ids.min()}..{ids.max()}")


# ----------------------------------------------------------------------------- the fused search


@numba.njit(cache=True, fastmath=kernels.FASTMATH)
def _search_tabular_root(tree, b, params, considered_table, num_considered, model, states, scratch):
    """Every simulation of tree ``b`` with the model looked up in tables, inside the kernel."""
    tree, model, states, scratch = borrow((tree, model, states, scratch))  # see search.borrow
    scratch_row = scratch[b]
    for sim in range(states.shape[1] - 1):
        considered_visit = kernels.root_considered_visit(
            params, considered_table, num_considered, b, sim
        )
        parent, action, child, depth = kernels.simulate_root(
            tree, b, params, considered_visit, scratch_row
        )
        node = sim + 1 if child == kernels.UNVISITED else child
        state = states[b, parent]
        next_state = model.next_state[state, action]
        states[b, node] = next_state
        status = kernels.expand_node(
            tree,
            b,
            params,
            sim,
            parent,
            action,
            node,
            depth,
            kernels.is_reset(params, depth),
            model.reward[state, action],
            model.discount[state, action],
            model.prior_logits[next_state],
            model.value[next_state],
            model.legal[next_state],
        )
        if status != kernels.OK:
            return status
    return kernels.OK


# What became of one root's search (`_search_one_root`).
SEARCHED = 0
ROOT_REFUSED = 1  # the root itself (its state id, logits, value or legal mask)
STEP_REFUSED = 2  # a model output met during the search


@numba.njit(cache=True)
def _search_one_root(
    tree, b, params, considered_table, roots, model, root_ids, states, scratch, status, results
):
    """Tree ``b`` from start to finish: the root, every simulation, the root's results. Writes
    ``status[b]`` (a `kernels` code); returns `SEARCHED`, `ROOT_REFUSED` or `STEP_REFUSED`."""
    status[b] = kernels.OK
    if not 0 <= root_ids[b] < model.value.shape[0]:
        status[b] = kernels.BAD_ROOT_STATE
        return ROOT_REFUSED
    states[b, 0] = root_ids[b]
    root_status = kernels.init_root(tree, b, roots, scratch[b])
    if root_status != kernels.OK:
        status[b] = root_status
        return ROOT_REFUSED
    status[b] = _search_tabular_root(
        tree, b, params, considered_table, roots.num_considered, model, states, scratch
    )
    if status[b] != kernels.OK:
        return STEP_REFUSED
    kernels.root_result(tree, b, params, results)
    return SEARCHED


@numba.njit(cache=True)
def search_tabular_serial(
    tree, params, considered_table, roots, model, root_ids, states, scratch, status, results
):
    """Returns ``(roots refused, roots whose search met a refused model output)``; ``status``
    says why, per root (so nothing is left for Python to scan when all is well)."""
    refused = 0
    failed = 0
    for b in range(states.shape[0]):
        outcome = _search_one_root(
            tree,
            b,
            params,
            considered_table,
            roots,
            model,
            root_ids,
            states,
            scratch,
            status,
            results,
        )
        refused += outcome == ROOT_REFUSED
        failed += outcome == STEP_REFUSED
    return refused, failed


@numba.njit(cache=True, parallel=True)
def search_tabular_parallel(
    tree, params, considered_table, roots, model, root_ids, states, scratch, status, results
):
    # One parallel region per search: roots are independent, so each thread runs whole trees.
    refused = 0
    failed = 0
    for b in numba.prange(states.shape[0]):
        outcome = _search_one_root(
            tree,
            b,
            params,
            considered_table,
            roots,
            model,
            root_ids,
            states,
            scratch,
            status,
            results,
        )
        refused += outcome == ROOT_REFUSED
        failed += outcome == STEP_REFUSED
    return refused, failed
