"""Node-indexed storage of the caller's embeddings.

The search never looks inside an embedding; it only says which node's embedding the model
continues from and which node receives the result. Arrays (torch on any device, or numpy) live
in one ``[B, N + 1, ...]`` buffer per leaf and move with a single gather/scatter per simulation;
Python objects (simulator states) live in per-root lists.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from search.validation import is_tensor as _is_tensor
from search.validation import torch_module as _torch


def _map(fn, tree: Any) -> Any:
    """Applies ``fn`` to the array leaves of a tuple/NamedTuple/dict nest."""
    if isinstance(tree, dict):
        return {key: _map(fn, value) for key, value in tree.items()}
    if isinstance(tree, tuple):
        mapped = [_map(fn, value) for value in tree]
        return type(tree)(*mapped) if hasattr(tree, "_fields") else tuple(mapped)
    return fn(tree)


def _map2(fn, tree: Any, other: Any, producer: str = "recurrent_fn") -> None:
    if isinstance(tree, dict):
        if not isinstance(other, dict) or other.keys() != tree.keys():
            raise ValueError(
                f"{producer} returned an embedding with keys {list(other)}; expected {list(tree)}"
            )
        for key in tree:
            _map2(fn, tree[key], other[key], producer)
    elif isinstance(tree, tuple):
        if not isinstance(other, tuple) or len(other) != len(tree):
            raise ValueError(
                f"{producer} returned an embedding nest of another structure than the root's"
            )
        for leaf, other_leaf in zip(tree, other, strict=True):
            _map2(fn, leaf, other_leaf, producer)
    else:
        fn(tree, other)


class ArrayEmbeddings:
    """Embeddings as arrays: a torch tensor, a numpy array, or a tuple/dict nest of them.

    ``storage`` mirrors the root's nest with leaves of shape ``[B, N + 1, ...]``.
    """

    # The function whose returned embeddings the store holds, named in errors.
    producer = "recurrent_fn"

    def __init__(self, root_embedding: Any, num_simulations: int):
        self.batch_size = None

        def allocate(leaf):
            if not (_is_tensor(leaf) or isinstance(leaf, np.ndarray)):
                raise TypeError(
                    "embedding leaves must be torch tensors or numpy arrays [B, ...] (or pass a "
                    f"Python list of B objects); got {type(leaf).__name__}"
                )
            if leaf.ndim < 1:
                raise ValueError(
                    "embedding arrays need a leading batch dimension [B, ...]; got a scalar"
                )
            if self.batch_size is None:
                self.batch_size = leaf.shape[0]
            elif leaf.shape[0] != self.batch_size:
                raise ValueError(
                    f"every leaf of the root embedding needs the same batch size; got {self.batch_size} and {leaf.shape[0]}"
                )
            shape = (leaf.shape[0], num_simulations + 1, *leaf.shape[1:])
            if _is_tensor(leaf):
                buffer = _torch().empty(shape, dtype=leaf.dtype, device=leaf.device)
                self.device = leaf.device
            else:
                buffer = np.empty(shape, dtype=leaf.dtype)
            buffer[:, 0] = leaf
            return buffer

        self.device = None
        self.storage = _map(allocate, root_embedding)
        self._nodes_per_root = num_simulations + 1
        self._row_offsets = np.arange(self.batch_size, dtype=np.int64) * self._nodes_per_root
        # Every leaf is also seen as [B * (N + 1), ...], so that a gather or a scatter is one
        # index_select / index_copy_ (or numpy take / put) with flat row ids.
        self._flat_storage = _map(lambda leaf: leaf.reshape(-1, *leaf.shape[2:]), self.storage)

    def _flat_rows(self, node_index: np.ndarray, leaf: Any, batch_rows: np.ndarray | None = None):
        offsets = self._row_offsets if batch_rows is None else self._row_offsets[batch_rows]
        rows = offsets + node_index
        if _is_tensor(leaf):
            rows = _torch().from_numpy(rows)
            return rows if leaf.device.type == "cpu" else rows.to(leaf.device, non_blocking=True)
        return rows

    def gather(self, node_index: np.ndarray, batch_rows: np.ndarray | None = None) -> Any:
        """Embeddings of ``node_index`` ``[B]``, one per root; with ``batch_rows`` ``[K]`` only
        those roots' (``node_index`` is then ``[K]``)."""

        def take(flat):
            rows = self._flat_rows(node_index, flat, batch_rows)
            return flat.index_select(0, rows) if _is_tensor(flat) else flat[rows]

        return _map(take, self._flat_storage)

    def scatter(
        self, node_index: np.ndarray, embedding: Any, batch_rows: np.ndarray | None = None
    ) -> None:
        """Stores ``embedding`` (a nest like the root's, leaves ``[B, ...]``) at ``node_index``;
        with ``batch_rows`` ``[K]`` the leaves are ``[K, ...]``, for those roots only."""
        num_rows = self.batch_size if batch_rows is None else len(batch_rows)

        def write(flat, value):
            leaf_shape = (num_rows, *flat.shape[1:])
            kind = "torch tensor" if _is_tensor(flat) else "numpy array"
            if _is_tensor(flat) != _is_tensor(value) or not (
                _is_tensor(value) or isinstance(value, np.ndarray)
            ):
                raise TypeError(
                    f"{self.producer} returned an embedding of type {type(value).__name__}; the root embedding is a {kind}"
                )
            same_kind = (
                _torch().can_cast(value.dtype, flat.dtype)
                if _is_tensor(value)
                else np.can_cast(value.dtype, flat.dtype, casting="same_kind")
            )
            if not same_kind:  # e.g. floats into an int store would be silently truncated
                raise TypeError(
                    f"{self.producer} returned an embedding of dtype {value.dtype}; the root embedding has dtype {flat.dtype}"
                )
            if tuple(value.shape) != leaf_shape:
                raise ValueError(
                    f"{self.producer} returned an embedding of shape {tuple(value.shape)}; expected "
                    f"{leaf_shape} like the root embedding"
                )
            rows = self._flat_rows(node_index, flat, batch_rows)
            if _is_tensor(value):
                # detach: the store must not keep autograd graphs alive
                flat.index_copy_(0, rows, value.detach().to(flat.dtype))
            else:
                flat[rows] = value

        _map2(write, self._flat_storage, embedding, self.producer)

    def actions(self, action: np.ndarray) -> Any:
        """The actions in the embeddings' own kind: a long tensor on their device, or numpy."""
        if self.device is not None:
            action = _torch().from_numpy(action.astype(np.int64))
            return (
                action if self.device.type == "cpu" else action.to(self.device, non_blocking=True)
            )
        return action.copy()


class ObjectEmbeddings:
    """Embeddings as Python objects (e.g. game states): ``storage[b][node]``."""

    producer = "recurrent_fn"  # named in errors

    def __init__(self, root_embedding: list, num_simulations: int):
        self.batch_size = len(root_embedding)
        self.storage = [[state] + [None] * num_simulations for state in root_embedding]

    def _rows(self, batch_rows: np.ndarray | None) -> list:
        if batch_rows is None:
            return self.storage
        return [self.storage[b] for b in batch_rows.tolist()]

    def gather(self, node_index: np.ndarray, batch_rows: np.ndarray | None = None) -> list:
        rows = self._rows(batch_rows)
        return [row[node] for row, node in zip(rows, node_index.tolist(), strict=True)]

    def scatter(
        self, node_index: np.ndarray, embedding: list, batch_rows: np.ndarray | None = None
    ) -> None:
        rows = self._rows(batch_rows)
        if len(embedding) != len(rows):
            raise ValueError(
                f"{self.producer} returned {len(embedding)} embeddings; expected {len(rows)}"
            )
        for row, node, state in zip(rows, node_index.tolist(), embedding, strict=True):
            row[node] = state

    def actions(self, action: np.ndarray) -> np.ndarray:
        return action.copy()


def make_embedding_store(root_embedding: Any, num_simulations: int):
    """A Python ``list`` holds one object per root; anything else is an array nest."""
    if isinstance(root_embedding, list):
        return ObjectEmbeddings(root_embedding, num_simulations)
    return ArrayEmbeddings(root_embedding, num_simulations)
