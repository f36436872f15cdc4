import numpy as np
import pytest

from mbrl.replay import ReplayBuffer

FIELDS = {"x": ((2,), np.float32), "y": ((), np.int64)}


def positions(start: int, count: int) -> dict:
    ids = np.arange(start, start + count)
    return {"x": np.stack([ids, ids], axis=1).astype(np.float32), "y": ids}


def test_ring_overwrites_the_oldest():
    replay = ReplayBuffer(5, FIELDS)
    replay.add(positions(0, 4))
    replay.add(positions(4, 3))
    assert len(replay) == 5 and replay.total_added == 7
    assert sorted(replay.data["y"].tolist()) == [2, 3, 4, 5, 6]


def test_uniform_sampling_is_seeded():
    replay = ReplayBuffer(100, FIELDS)
    replay.add(positions(0, 100))
    first = replay.sample(32, np.random.default_rng(1))
    second = replay.sample(32, np.random.default_rng(1))
    np.testing.assert_array_equal(first.indices, second.indices)
    np.testing.assert_array_equal(first.fields["y"], first.indices)
    assert (first.weights == 1).all()


def test_prioritized_sampling_prefers_large_errors_and_weights_them_down():
    replay = ReplayBuffer(100, FIELDS, prioritized=True, alpha=1.0, beta=1.0)
    replay.add(positions(0, 100))
    errors = np.full(100, 0.01)
    errors[7] = 10.0
    replay.update_priorities(np.arange(100), errors)
    sample = replay.sample(1000, np.random.default_rng(0))
    assert (sample.indices == 7).mean() > 0.8
    assert sample.weights[sample.indices == 7].max() < sample.weights.max()


def test_new_positions_get_the_largest_priority():
    replay = ReplayBuffer(10, FIELDS, prioritized=True)
    replay.add(positions(0, 2))
    replay.update_priorities(np.array([0, 1]), np.array([3.0, 0.5]))
    replay.add(positions(2, 1))
    assert replay.priorities[2] == replay.priorities[:2].max()


def test_state_dict_round_trips():
    replay = ReplayBuffer(8, FIELDS, prioritized=True)
    replay.add(positions(0, 11))
    copy = ReplayBuffer(8, FIELDS, prioritized=True)
    copy.load_state_dict(replay.state_dict())
    for name in FIELDS:
        np.testing.assert_array_equal(copy.data[name], replay.data[name])
    assert (copy.size, copy.cursor, copy.total_added) == (8, 3, 11)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(0, FIELDS)
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(4, FIELDS).sample(1, np.random.default_rng())
    with pytest.raises(ValueError, match="fields"):
        ReplayBuffer(4, FIELDS).add({"x": np.zeros((1, 2))})
    with pytest.raises(ValueError, match=r"capacity 8 .* capacity 4"):
        ReplayBuffer(4, FIELDS).load_state_dict(ReplayBuffer(8, FIELDS).state_dict())
