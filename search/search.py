"""The search loop: one batched model call per simulation between two numba kernels.

``run_search`` is shared by the MuZero (PUCT) and Gumbel MuZero policies in `search.policies`;
it owns no semantics of its own beyond validating what the model returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from search import kernels
from search.embeddings import make_embedding_store
from search.records import StepOutput
from search.seq_halving import considered_visit_table
from search.tabular import (
    TabularModel,
    raise_bad_root_state,
    root_state_ids,
    search_tabular_parallel,
    search_tabular_serial,
)
from search.tree import Tree, allocate_tree
from search.validation import float_array, legal_mask_array

# Below this many roots the parallel kernels cost more (thread wake-up) than they save.
PARALLEL_MIN_BATCH = 64
# The fused tabular search runs whole trees per thread; below this many root-simulations the
# thread wake-up is not worth it.
PARALLEL_MIN_TABULAR_WORK = 512

_STATUS_MESSAGES = {
    kernels.BAD_VALUE: "a NaN or infinite value",
    kernels.BAD_REWARD: "a NaN or infinite reward",
    kernels.BAD_DISCOUNT: "a NaN or infinite discount",
    kernels.BAD_LOGITS: "NaN or +inf prior logits",
    kernels.NO_LEGAL_ACTION: "a legal mask with no legal action",
    kernels.NO_FINITE_LOGIT: "prior logits that are -inf on every legal action",
}


def run_search(
    *,
    roots: kernels.Roots,
    embedding: Any,
    recurrent_fn: Callable,
    num_simulations: int,
    params: kernels.KernelParams,
    root_gumbel: np.ndarray | None = None,
) -> tuple[Tree, Any, kernels.RootResults]:
    """Builds B trees of ``num_simulations`` simulations; returns ``(tree, embedding_store,
    root results)``.

    ``roots`` holds shape- and dtype-checked arrays (`kernels.make_roots`); the kernels check
    their values, and a refused root gets the error message of `raise_bad_roots`.
    ``root_gumbel`` ``[B, A]`` float32 is kept by the tree, not copied.
    """
    batch_size, num_actions = roots.prior_logits.shape
    tree = allocate_tree(batch_size, num_simulations, num_actions, root_gumbel)
    status = np.empty(batch_size, np.int32)
    scratch = np.empty((batch_size, num_actions), np.float64)
    table = considered_visit_table(max(roots.max_considered, 1), num_simulations)
    results = kernels.allocate_root_results(
        batch_size, num_actions, params.policy == kernels.POLICY_GUMBEL
    )
    if isinstance(recurrent_fn, TabularModel):
        states = _run_tabular(
            tree, params, table, roots, recurrent_fn, embedding, scratch, status, results
        )
        return tree, TabularEmbeddings(states), results

    call(kernels.init_roots, tree, roots, scratch, status)
    if status.any():
        raise_bad_roots(roots)
    store = make_embedding_store(embedding, num_simulations)
    if store.batch_size != batch_size:
        raise ValueError(
            f"root embedding has batch size {store.batch_size}; prior_logits has {batch_size}"
        )
    pending = kernels.allocate_pending(status)
    all_legal = np.ones((batch_size, num_actions), np.bool_)
    if batch_size >= PARALLEL_MIN_BATCH:
        simulate, expand_and_backup = kernels.simulate_parallel, kernels.expand_and_backup_parallel
    else:
        simulate, expand_and_backup = kernels.simulate_serial, kernels.expand_and_backup_serial
    value_prefix = params.value_prefix_horizon > 0
    num_considered = roots.num_considered

    simulate = _entry_point(simulate, tree, params, 0, table, num_considered, pending, scratch)
    for sim in range(num_simulations):
        simulate(tree, params, sim, table, num_considered, pending, scratch)
        parent_embedding = store.gather(pending.parent_index)
        actions = store.actions(pending.action)
        if value_prefix:
            result = recurrent_fn(parent_embedding, actions, pending.is_reset.copy())
        else:
            result = recurrent_fn(parent_embedding, actions)
        step, new_embedding = _unpack(result)
        store.scatter(pending.node_index, new_embedding)
        step_arrays = _step_arrays(step, batch_size, num_actions, all_legal, sim)
        if sim == 0:
            expand_and_backup = _entry_point(
                expand_and_backup, tree, params, sim, pending, *step_arrays
            )
        if expand_and_backup(tree, params, sim, pending, *step_arrays):  # count of refused roots
            _raise_bad_step(pending.status, sim)
    call(kernels.root_results, tree, params, results)
    return tree, store, results


def raise_bad_roots(roots: kernels.Roots, model=None, root_ids=None) -> None:
    """A kernel refused a root; the numpy checks name the rows and the accepted values."""
    batch_size, num_actions = roots.prior_logits.shape
    float_array(roots.prior_logits, "root.prior_logits", (batch_size, num_actions))
    float_array(roots.value, "root.value", (batch_size,))
    legal_mask_array(roots.legal, "legal_mask", (batch_size, num_actions))
    if model is not None:
        raise_bad_root_state(root_ids, model)
    raise AssertionError("a kernel refused a root that passes every check")  # a bug


class TabularEmbeddings(NamedTuple):
    """Node-indexed state ids ``[B, N + 1]`` of a tabular search (0 in unused slots)."""

    storage: np.ndarray


def _run_tabular(
    tree, params, table, roots, model, embedding, scratch, status, results
) -> np.ndarray:
    """The whole search, roots and results included, inside one kernel call; returns the
    state id of every node."""
    batch_size, num_nodes = tree.node_visits.shape
    if params.value_prefix_horizon > 0:
        raise ValueError(
            "value_prefix_horizon needs a learned model; a TabularModel has per-edge rewards"
        )
    if model.prior_logits.shape[1] != tree.children_legal.shape[2]:
        raise ValueError(
            f"the TabularModel has {model.prior_logits.shape[1]} actions; the root has {tree.children_legal.shape[2]}"
        )
    root_ids = root_state_ids(embedding, batch_size)
    states = np.zeros((batch_size, num_nodes), np.int32)
    # One parallel region per search (not per simulation), so threads pay off much earlier.
    parallel = batch_size > 1 and batch_size * (num_nodes - 1) >= PARALLEL_MIN_TABULAR_WORK
    kernel = search_tabular_parallel if parallel else search_tabular_serial
    refused, failed = call(
        kernel, tree, params, table, roots, model, root_ids, states, scratch, status, results
    )
    if refused:
        raise_bad_roots(roots, model, root_ids)
    if failed:
        _raise_bad_step(status, None)
    return states


_ENTRY_POINTS: dict = {}


def _entry_point(kernel, *args):
    """The compiled function for these argument types, called without numba's per-call type
    dispatch (about 4 us for a tree of 13 arrays, paid twice per simulation otherwise). Every
    later call must pass arguments of the same types: the loop reuses the same tree, params and
    work arrays, and `_step_arrays` always yields writeable C-contiguous float32/bool arrays.
    Cached per search by a cheap type key, so the lookup itself stays out of the loop."""
    key = (kernel, *(_type_key(arg) for arg in args))
    entry = _ENTRY_POINTS.get(key)
    if entry is None:
        entry = _ENTRY_POINTS[key] = kernel.compile(tuple(kernel.typeof_pyval(arg) for arg in args))
    return entry


def call(kernel, *args):
    """``kernel(*args)`` through its cached entry point (see `_entry_point`)."""
    return _entry_point(kernel, *args)(*args)


# Records that only this package builds, each always with the same field types: their class
# is their type key (a field-by-field key costs as much as numba's own dispatch).
_FIXED_RECORDS = (Tree, kernels.Pending, kernels.KernelParams, kernels.Roots, kernels.RootResults)


# The ndarray flags that numba's array types depend on (layout, alignment, read-only): numpy's
# NPY_ARRAY_C_CONTIGUOUS | F_CONTIGUOUS | ALIGNED | WRITEABLE.
_TYPED_FLAGS = 0x1 | 0x2 | 0x100 | 0x400


def _type_key(arg):
    if isinstance(arg, np.ndarray):
        return (arg.dtype.num, arg.ndim, arg.flags.num & _TYPED_FLAGS)
    if type(arg) in _FIXED_RECORDS:
        return type(arg)
    if isinstance(arg, tuple):  # TabularModel: built by the caller, so checked field by field
        return _caller_record_key(arg)
    return type(arg)


# id(record) -> (record, key). Holding the record keeps its id from being reused by another
# object while the entry lives; a few entries cover the models a program searches with.
_CALLER_RECORD_KEYS: dict[int, tuple] = {}
_MAX_CALLER_RECORDS = 8


def _caller_record_key(record: tuple):
    """The key of a caller-built record (a `TabularModel`), computed once per record object:
    its fields cannot be reassigned, and the kernels only read them (so a flag flipped on a
    field later cannot make a compiled kernel write where it must not). A few us per search."""
    entry = _CALLER_RECORD_KEYS.get(id(record))
    if entry is not None and entry[0] is record:
        return entry[1]
    key = (type(record), *(_type_key(field) for field in record))
    if len(_CALLER_RECORD_KEYS) >= _MAX_CALLER_RECORDS:
        _CALLER_RECORD_KEYS.clear()
    _CALLER_RECORD_KEYS[id(record)] = (record, key)
    return key


def _unpack(result: Any) -> tuple[StepOutput, Any]:
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], StepOutput)):
        raise TypeError(
            "recurrent_fn must return a pair (search.StepOutput, new_embedding); got "
            f"{type(result).__name__}"
        )
    return result


def _step_arrays(
    step: StepOutput, batch_size: int, num_actions: int, all_legal: np.ndarray, sim: int
):
    """The model's step output as float32/bool numpy arrays; finiteness is checked in the kernel."""
    reward = float_array(step.reward, "StepOutput.reward", (batch_size,), check_finite=False)
    discount = float_array(step.discount, "StepOutput.discount", (batch_size,), check_finite=False)
    logits = float_array(
        step.prior_logits, "StepOutput.prior_logits", (batch_size, num_actions), check_finite=False
    )
    value = float_array(step.value, "StepOutput.value", (batch_size,), check_finite=False)
    if step.legal is None:
        legal = all_legal
    else:
        legal = legal_mask_array(
            step.legal, f"StepOutput.legal (simulation {sim})", (batch_size, num_actions)
        )
    return reward, discount, logits, value, legal


def _raise_bad_step(status: np.ndarray, sim: int | None) -> None:
    roots = np.nonzero(status)[0]
    code = int(status[roots[0]])
    where = "" if sim is None else f" at simulation {sim}"
    raise ValueError(
        f"recurrent_fn returned {_STATUS_MESSAGES[code]}{where} for roots "
        f"{roots[:10].tolist()}; values, rewards and discounts must be finite, logits must not be "
        "NaN or +inf, and every node needs a legal action"
    )
