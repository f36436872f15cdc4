"""Unit tests of `search.embeddings`: node-indexed stores of arrays, nests and Python objects."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
import torch

from search.embeddings import ArrayEmbeddings, ObjectEmbeddings, make_embedding_store

BATCH, SIMS = 3, 4


class Latent(NamedTuple):
    hidden: np.ndarray
    step: np.ndarray


def test_numpy_store_has_a_slot_per_node_and_the_root_in_slot_0():
    root = np.arange(BATCH * 2, dtype=np.float32).reshape(BATCH, 2)
    store = ArrayEmbeddings(root, SIMS)
    assert store.batch_size == BATCH and store.device is None
    assert isinstance(store.storage, np.ndarray)
    assert store.storage.shape == (BATCH, SIMS + 1, 2) and store.storage.dtype == np.float32
    np.testing.assert_array_equal(store.storage[:, 0], root)
    np.testing.assert_array_equal(store.gather(np.zeros(BATCH, np.int32)), root)


def test_numpy_scatter_then_gather_round_trips_per_root():
    store = ArrayEmbeddings(np.zeros((BATCH, 2), np.int64), SIMS)
    nodes = np.array([1, 3, 2], np.int32)
    values = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    before = store.storage.copy()
    store.scatter(nodes, values)
    np.testing.assert_array_equal(store.gather(nodes), values)
    for b, node in enumerate(nodes):
        np.testing.assert_array_equal(store.storage[b, node], values[b])
    # Other roots' slots of the same node index are untouched.
    np.testing.assert_array_equal(store.storage[0, 3], before[0, 3])
    np.testing.assert_array_equal(store.storage[:, 0], 0)


def test_gathered_embeddings_are_copies_not_views_of_the_store():
    store = ArrayEmbeddings(np.zeros((BATCH, 2), np.float32), SIMS)
    root = np.zeros(BATCH, np.int32)
    gathered = store.gather(root)
    gathered += 7.0  # a model that writes into its input must not corrupt the tree
    np.testing.assert_array_equal(store.storage[:, 0], 0.0)
    store.scatter(root, np.ones((BATCH, 2), np.float32))
    np.testing.assert_array_equal(gathered, 7.0)


def test_numpy_actions_are_a_copy():
    store = ArrayEmbeddings(np.zeros(BATCH, np.int32), SIMS)
    action = np.array([0, 1, 2], np.int32)
    returned = store.actions(action)
    assert isinstance(returned, np.ndarray) and returned is not action
    np.testing.assert_array_equal(returned, action)


def test_torch_store_keeps_dtype_and_device_and_gives_long_actions():
    root = torch.arange(BATCH * 4, dtype=torch.float64).reshape(BATCH, 4)
    store = ArrayEmbeddings(root, SIMS)
    assert isinstance(store.storage, torch.Tensor)
    assert store.storage.shape == (BATCH, SIMS + 1, 4)
    assert store.storage.dtype == torch.float64 and store.device == root.device
    torch.testing.assert_close(store.storage[:, 0], root)
    nodes = np.array([2, 1, 4], np.int32)
    values = -torch.ones(BATCH, 4, dtype=torch.float64)
    store.scatter(nodes, values)
    torch.testing.assert_close(store.gather(nodes), values)
    actions = store.actions(np.array([0, 3, 1], np.int32))
    assert isinstance(actions, torch.Tensor) and actions.dtype == torch.long
    assert actions.tolist() == [0, 3, 1]


def test_tuple_nest_of_numpy_and_torch_leaves():
    root = (np.zeros((BATCH, 2), np.float32), torch.arange(BATCH))
    store = ArrayEmbeddings(root, SIMS)
    assert isinstance(store.storage, tuple) and len(store.storage) == 2
    assert store.storage[0].shape == (BATCH, SIMS + 1, 2)
    assert isinstance(store.storage[1], torch.Tensor) and store.storage[1].shape == (
        BATCH,
        SIMS + 1,
    )
    nodes = np.array([1, 1, 2], np.int32)
    store.scatter(nodes, (np.ones((BATCH, 2), np.float32), torch.tensor([7, 8, 9])))
    gathered = store.gather(nodes)
    assert isinstance(gathered, tuple)
    np.testing.assert_array_equal(gathered[0], 1.0)
    assert gathered[1].tolist() == [7, 8, 9]
    # Torch in the nest makes the actions torch tensors.
    assert isinstance(store.actions(np.zeros(BATCH, np.int32)), torch.Tensor)


def test_namedtuple_nest_keeps_its_type():
    root = Latent(np.zeros((BATCH, 3), np.float32), np.zeros(BATCH, np.int32))
    store = ArrayEmbeddings(root, SIMS)
    assert isinstance(store.storage, Latent)
    assert store.storage.hidden.shape == (BATCH, SIMS + 1, 3)
    nodes = np.array([4, 4, 4], np.int32)
    store.scatter(
        nodes, Latent(np.full((BATCH, 3), 2.0, np.float32), np.array([1, 2, 3], np.int32))
    )
    gathered = store.gather(nodes)
    assert isinstance(gathered, Latent)
    np.testing.assert_array_equal(gathered.step, [1, 2, 3])


def test_dict_nest():
    root = {
        "hidden": np.zeros((BATCH, 2), np.float32),
        "reward_state": {"h": np.zeros((BATCH, 5), np.float16)},
    }
    store = ArrayEmbeddings(root, SIMS)
    assert set(store.storage) == {"hidden", "reward_state"}
    assert store.storage["reward_state"]["h"].shape == (BATCH, SIMS + 1, 5)
    assert store.storage["reward_state"]["h"].dtype == np.float16
    nodes = np.array([3, 2, 1], np.int32)
    new = {
        "hidden": np.ones((BATCH, 2), np.float32),
        "reward_state": {"h": np.full((BATCH, 5), 3.0, np.float16)},
    }
    store.scatter(nodes, new)
    gathered = store.gather(nodes)
    np.testing.assert_array_equal(gathered["hidden"], 1.0)
    np.testing.assert_array_equal(gathered["reward_state"]["h"], 3.0)


def test_scatter_rejects_a_leaf_of_another_shape():
    store = ArrayEmbeddings(np.zeros((BATCH, 2), np.float32), SIMS)
    with pytest.raises(
        ValueError, match=r"recurrent_fn returned an embedding of shape \(3, 5\); expected \(3, 2\)"
    ):
        store.scatter(np.ones(BATCH, np.int32), np.zeros((BATCH, 5), np.float32))


def test_scatter_rejects_a_nest_of_another_structure():
    store = ArrayEmbeddings((np.zeros(BATCH), np.zeros(BATCH)), SIMS)
    with pytest.raises(ValueError, match="embedding nest of another structure than the root's"):
        store.scatter(np.ones(BATCH, np.int32), (np.zeros(BATCH),))
    dict_store = ArrayEmbeddings({"a": np.zeros(BATCH)}, SIMS)
    with pytest.raises(ValueError, match=r"keys \['b'\]; expected \['a'\]"):
        dict_store.scatter(np.ones(BATCH, np.int32), {"b": np.zeros(BATCH)})


def test_leaves_must_be_arrays_with_a_batch_dimension():
    with pytest.raises(
        TypeError, match=r"embedding leaves must be torch tensors or numpy arrays .* got list"
    ):
        ArrayEmbeddings((np.zeros(BATCH), [1, 2, 3]), SIMS)
    with pytest.raises(ValueError, match=r"leading batch dimension \[B, \.\.\.\]; got a scalar"):
        ArrayEmbeddings(np.array(1.0), SIMS)


def test_nest_leaves_must_share_the_batch_size():
    with pytest.raises(ValueError, match=r"batch"):
        ArrayEmbeddings({"a": np.zeros((BATCH, 2)), "b": np.zeros((BATCH + 1, 2))}, SIMS)


def test_object_store_keeps_one_list_per_root():
    roots = [("s", 0), ("s", 1), ("s", 2)]
    store = ObjectEmbeddings(roots, SIMS)
    assert store.batch_size == BATCH
    assert [row[0] for row in store.storage] == roots
    assert all(len(row) == SIMS + 1 and row[1:] == [None] * SIMS for row in store.storage)
    nodes = np.array([1, 2, 1], np.int32)
    new = [{"id": 10}, {"id": 11}, {"id": 12}]
    store.scatter(nodes, new)
    gathered = store.gather(nodes)
    assert isinstance(gathered, list)
    assert all(got is obj for got, obj in zip(gathered, new, strict=True))  # stored, not copied
    assert store.gather(np.zeros(BATCH, np.int32)) == roots
    assert store.storage[1][1] is None


def test_object_store_rejects_a_list_of_another_length():
    store = ObjectEmbeddings([0, 1, 2], SIMS)
    with pytest.raises(ValueError, match="recurrent_fn returned 2 embeddings; expected 3"):
        store.scatter(np.ones(BATCH, np.int32), [5, 6])


def test_object_store_actions_are_a_numpy_copy():
    store = ObjectEmbeddings([0, 1, 2], SIMS)
    action = np.array([2, 0, 1], np.int32)
    returned = store.actions(action)
    assert isinstance(returned, np.ndarray) and returned is not action
    np.testing.assert_array_equal(returned, action)


@pytest.mark.parametrize(
    ("root", "kind"),
    [
        ([object(), object()], ObjectEmbeddings),
        ([], ObjectEmbeddings),
        (np.zeros(2), ArrayEmbeddings),
        (torch.zeros(2), ArrayEmbeddings),
        ((np.zeros(2), np.zeros(2)), ArrayEmbeddings),
        ({"a": np.zeros(2)}, ArrayEmbeddings),
    ],
    ids=["list", "empty-list", "numpy", "torch", "tuple", "dict"],
)
def test_make_embedding_store_picks_the_store_by_type(root, kind):
    assert isinstance(make_embedding_store(root, SIMS), kind)


def test_a_tuple_of_objects_is_not_taken_for_a_list_of_states():
    with pytest.raises(TypeError, match=r"or pass a Python list of B objects"):
        make_embedding_store(("state-a", "state-b"), SIMS)


def test_search_does_not_import_torch():
    """DESIGN.md: `search` depends on numpy and numba only; tensors work when the caller has torch."""
    import subprocess
    import sys

    code = "import sys, search; assert 'torch' not in sys.modules, 'search imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)
