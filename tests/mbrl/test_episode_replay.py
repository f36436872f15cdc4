"""Episode replay: unroll targets against hand computations and a brute-force reference."""

import dataclasses

import numpy as np
import pytest

from mbrl.config import AlgoConfig, ModelConfig
from mbrl.replay.episodes import Episode, EpisodeReplay


def episode(
    length,
    *,
    rewards=None,
    values=None,
    turns=False,
    terminated=True,
    final_value=0.0,
    obs=None,
    num_actions=3,
):
    rng = np.random.default_rng(length)
    rewards = np.arange(1, length + 1, dtype=np.float32) if rewards is None else rewards
    values = 10.0 * np.arange(1, length + 1, dtype=np.float32) if values is None else values
    policy = rng.dirichlet(np.ones(num_actions), size=length).astype(np.float32)
    return Episode(
        obs=np.arange(length, dtype=np.float32)[:, None] if obs is None else obs,
        actions=rng.integers(0, num_actions, size=length),
        rewards=np.asarray(rewards, np.float32),
        to_play=(np.arange(length) % 2 if turns else np.zeros(length)).astype(np.int64),
        policy=policy,
        root_value=np.asarray(values, np.float32),
        move_value=np.asarray(values, np.float32),
        legal=np.ones((length, num_actions), np.bool_),
        turn_changes=np.full(length, turns),
        terminated=terminated,
        final_value=final_value,
    )


def replay(capacity=100, *, k=3, n=2, gamma=0.5, obs_shape=(1,), stack=1, prioritized=False):
    algo = AlgoConfig(unroll_steps=k, td_steps=n, discount=gamma)
    return EpisodeReplay(
        capacity, obs_shape, np.float32, 3, algo, frame_stack=stack, prioritized=prioritized
    )


def unroll_at(buffer, position):
    rng = np.random.default_rng(0)
    return buffer.unroll(np.array([position]), np.ones(1, np.float32), rng, future_obs=True)


def test_n_step_values_rewards_and_absorbing_end_by_hand():
    buffer = replay()
    buffer.add(episode(6))  # rewards 1..6, values 10..60, gamma 0.5, n 2
    at2 = unroll_at(buffer, 2)
    # z_u = r_u + g r_{u+1} + g^2 v_{u+2}
    assert at2.value[0].tolist() == [3 + 0.5 * 4 + 0.25 * 50, 4 + 0.5 * 5 + 0.25 * 60, 5 + 3, 6]
    assert at2.reward[0].tolist() == [0, 3, 4, 5]
    assert at2.policy_mask[0].tolist() == [1, 1, 1, 1]
    at4 = unroll_at(buffer, 4)  # steps 4, 5 inside; 6, 7 past a termination: absorbing
    assert at4.value[0].tolist() == [5 + 3, 6, 0, 0]
    assert at4.value_mask[0].tolist() == [1, 1, 1, 1]
    assert at4.policy_mask[0].tolist() == [1, 1, 0, 0]
    assert at4.reward[0].tolist() == [0, 5, 6, 0]
    assert at4.reward_mask[0].tolist() == [0, 1, 1, 1]
    assert not at4.policy[0, 2:].any()
    assert at4.bootstrap_index[0].tolist() == [-1, -1, -1, -1]


def test_the_afterstate_q_targets_have_their_own_horizon():
    buffer = replay(n=2)
    buffer.add(episode(6))  # rewards 1..6, values 10..60, gamma 0.5
    assert unroll_at(buffer, 2).q_targets is None  # by default Q learns the value targets
    buffer.algo = AlgoConfig(unroll_steps=3, td_steps=2, discount=0.5, q_td_steps=1)
    at2 = unroll_at(buffer, 2)
    q = at2.q_targets
    # q_u = r_u + g v_{u+1}; the state's value targets keep n = 2
    assert q.value[0].tolist() == [3 + 0.5 * 40, 4 + 0.5 * 50, 5 + 0.5 * 60, 6]
    assert q.bootstrap_index[0].tolist() == [3, 4, 5, -1]
    assert q.bootstrap_discount[0].tolist() == [0.5, 0.5, 0.5, 0.0]
    assert at2.value[0, 0] == 3 + 0.5 * 4 + 0.25 * 50
    assert unroll_at(buffer, 5).q_targets.value[0].tolist() == [6, 0, 0, 0]  # past the end


def test_truncated_episode_bootstraps_from_the_final_value_and_masks_past_its_end():
    buffer = replay()
    buffer.add(episode(6, terminated=False, final_value=100.0))
    at4 = unroll_at(buffer, 4)
    assert at4.value[0, :2].tolist() == [5 + 0.5 * 6 + 0.25 * 100, 6 + 0.5 * 100]
    assert at4.value_mask[0].tolist() == [1, 1, 0, 0]
    assert at4.reward_mask[0].tolist() == [0, 1, 1, 0]  # r_5 is known; nothing after
    assert at4.bootstrap_discount[0, :2].tolist() == [0.25, 0.5]


def test_two_player_returns_alternate_sign():
    buffer = replay(gamma=1.0, n=3)
    buffer.add(episode(5, turns=True, rewards=[0, 0, 0, 0, 1]))  # player to move at 4 wins
    at0 = unroll_at(buffer, 0)
    # z_u = r_u - r_{u+1} + r_{u+2} - v_{u+3}
    assert at0.value[0].tolist() == [0 - 0 + 0 - 40, 0 - 0 + 0 - 50, 0 - 0 + 1, -1]
    at3 = unroll_at(buffer, 3)
    assert at3.value[0, :2].tolist() == [-1, 1]  # the loser sees -1, the winner +1


def brute_force_value(ep: Episode, u: int, n: int, gamma: float) -> float:
    total, discount = 0.0, 1.0
    for i in range(n):
        if u + i >= len(ep.actions):
            return total + (0.0 if ep.terminated else discount * ep.final_value)
        total += discount * ep.rewards[u + i]
        discount *= -gamma if ep.turn_changes[u + i] else gamma
    if u + n < len(ep.actions):
        return total + discount * ep.root_value[u + n]
    return total + (0.0 if ep.terminated else discount * ep.final_value)


@pytest.mark.parametrize("turns", [False, True])
def test_every_value_target_matches_a_brute_force_reference(turns):
    rng = np.random.default_rng(1)
    buffer = replay(capacity=64, k=4, n=5, gamma=0.9)
    episodes = []
    for i in range(12):  # more than the capacity: the ring overwrites
        ep = episode(
            int(rng.integers(1, 12)),
            rewards=rng.normal(size=12).astype(np.float32),
            values=rng.normal(size=12).astype(np.float32),
            turns=turns,
            terminated=bool(i % 3),
            final_value=float(rng.normal()),
        )
        length = len(ep.actions)
        ep = ep._replace(
            rewards=ep.rewards[:length],
            root_value=ep.root_value[:length],
            move_value=ep.move_value[:length],
        )
        buffer.add(ep)
        episodes.append((buffer.total_added - length, ep))
    for start, ep in episodes:
        for t in range(len(ep.actions)):
            if start + t < buffer.oldest:
                continue
            targets = unroll_at(buffer, start + t)
            for k in range(5):
                if t + k < len(ep.actions):
                    expected = brute_force_value(ep, t + k, 5, 0.9)
                    assert targets.value[0, k] == pytest.approx(expected, abs=1e-5)


def test_frame_stacks_are_rebuilt_from_stored_frames():
    length, stack = 7, 4
    frames = np.arange(length, dtype=np.float32).reshape(length, 1, 1, 1) * np.ones((1, 1, 2, 2))
    stacked = np.stack(
        [
            np.concatenate([frames[max(t - b, 0)] for b in range(stack - 1, -1, -1)])
            for t in range(length)
        ]
    )  # oldest first, the first frame repeated before the start
    buffer = replay(obs_shape=(stack, 2, 2), stack=stack)
    buffer.add(episode(length, obs=stacked))
    assert buffer.frames.shape[1:] == (1, 2, 2)  # only the newest frame is stored
    np.testing.assert_array_equal(buffer.observations(np.arange(length)), stacked)
    targets = unroll_at(buffer, 2)
    np.testing.assert_array_equal(targets.obs[0], stacked[2])
    np.testing.assert_array_equal(targets.future_obs[0], stacked[3:6])


def test_state_dict_round_trip_keeps_the_ring_and_priorities():
    buffer = replay(capacity=20, prioritized=True)
    for length in (8, 9, 7):
        buffer.add(episode(length))
    buffer.update_priorities(np.array([buffer.oldest + 1]), np.array([5.0]))
    copy = replay(capacity=20, prioritized=True)
    copy.load_state_dict(buffer.state_dict())
    a = buffer.sample(16, np.random.default_rng(3))
    b = copy.sample(16, np.random.default_rng(3))
    for field in ("indices", "value", "policy", "actions", "weights"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    with pytest.raises(ValueError, match="capacity 20"):
        replay(capacity=21).load_state_dict(buffer.state_dict())


def test_prioritized_sampling_follows_priorities():
    buffer = replay(prioritized=True)
    buffer.add(episode(10))
    buffer.update_priorities(np.arange(10), np.r_[np.full(9, 1e-3), 100.0])
    positions, weights = buffer.sample_positions(200, np.random.default_rng(0))
    assert (positions == 9).mean() > 0.9
    assert weights[positions == 9].max() < weights[positions != 9].min()


def test_new_episodes_get_the_largest_priority_and_an_empty_replay_refuses_to_sample():
    buffer = replay(prioritized=True)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(1, np.random.default_rng())
    buffer.add(episode(4))
    buffer.update_priorities(np.arange(4), np.array([3.0, 0.5, 0.1, 0.1]))
    buffer.add(episode(2))
    assert buffer.priorities[4] == buffer.priorities[5] == buffer.priorities[:4].max()


def test_a_capacity_that_cannot_fit_fails_at_start_up_with_the_estimate():
    with pytest.raises(MemoryError, match=r"GiB.*lower replay.capacity"):
        EpisodeReplay(10**9, (12, 96, 96), np.uint8, 18, AlgoConfig(), frame_stack=4)


def test_an_episode_longer_than_the_replay_is_refused():
    with pytest.raises(ValueError, match="does not fit"):
        replay(capacity=4).add(episode(5))


def test_dynamic_td_horizon_shortens_the_bootstrap_of_old_positions():
    algo = AlgoConfig(unroll_steps=1, td_steps=3, discount=0.5, dynamic_td_every=10)
    buffer = EpisodeReplay(100, (1,), np.float32, 3, algo, prioritized=False)
    buffer.add(episode(6))
    buffer.add(episode(20))  # total_added = 26: position 0 is 26 steps old
    assert buffer.td_horizon(np.array([0, 10, 20, 25])).tolist() == [1, 2, 3, 3]
    old = unroll_at(buffer, 0)  # n = 1: z_0 = r_0 + g v_1
    assert old.value[0, 0] == 1 + 0.5 * 20
    fresh = unroll_at(buffer, 20)  # n = 3 inside the second episode
    assert fresh.value[0, 0] == 15 + 0.5 * 16 + 0.25 * 17 + 0.125 * 180


def test_segments_sample_only_their_own_positions():
    for prioritized in (False, True):
        buffer = replay(prioritized=prioritized)
        ep = episode(12)._replace(context=2, sampleable=6)  # 2 context, 6 sampled, 4 targets only
        buffer.add(ep)
        positions, _ = buffer.sample_positions(500, np.random.default_rng(0))
        assert set(positions.tolist()) == set(range(2, 8))


def test_segmented_episodes_give_the_same_unroll_targets_as_whole_ones():
    """The actor's segments of a long CartPole episode, stored and sampled, give exactly the
    targets the whole episode gives (value, reward, policy, actions, masks)."""
    import torch

    from games import ClassicControlEnv
    from mbrl.networks.muzero import MuZeroNet
    from mbrl.selfplay.actor import SelfPlayActor
    from mbrl.selfplay.latent_model import LatentModel
    from search import SearchSettings

    torch.manual_seed(0)
    net = MuZeroNet((4,), 2, ModelConfig(channels=8, blocks=1, latent_dim=8, head_hidden=8))
    net = net.eval()
    algo = AlgoConfig(unroll_steps=2, td_steps=3, discount=0.9)

    def play(segment_length):
        model = LatentModel(net, discount=0.9, two_player=False)
        actor = SelfPlayActor(
            ClassicControlEnv("CartPole-v1", 1),
            model,
            SearchSettings(num_simulations=4),
            seed=3,
            segment_length=segment_length,
            segment_overlap=algo.td_steps + algo.unroll_steps,
        )
        buffer = EpisodeReplay(1000, (4,), np.float32, 2, algo, prioritized=False)
        while actor.episodes_finished == 0:
            for ep in actor.step():
                buffer.add(ep)
        return buffer

    whole, segmented = play(0), play(2)
    length = whole.total_added
    assert length >= 9  # long enough for two segments before the end
    assert segmented.total_added > length  # overlaps are stored twice
    mine = np.flatnonzero(segmented.sampleable[: segmented.total_added])
    assert len(mine) == length
    rng = np.random.default_rng(0)
    a = whole.unroll(np.arange(length), np.ones(length, np.float32), rng)
    b = segmented.unroll(mine, np.ones(length, np.float32), np.random.default_rng(0))
    np.testing.assert_array_equal(a.obs, b.obs)
    for field in ("value", "reward", "policy", "policy_mask", "value_mask", "reward_mask"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-6)
    inside = a.policy_mask[:, :-1] > 0
    np.testing.assert_array_equal(a.actions[inside], b.actions[inside])


class CounterEnv:
    """A 20-step episode whose observation stacks the last 4 frames, frame t being the number t
    (the first frame repeated before the start, as Atari's stacks are)."""

    batch_size, num_actions, length = 1, 2, 20

    def reset(self, seeds=None, indices=None):
        self.t = 0
        return self._timestep(0.0, False)

    def step(self, actions):
        self.t += 1
        return self._timestep(1.0, self.t >= self.length)

    def _timestep(self, reward, done):
        from games import TimeStep

        frames = [max(self.t - back, 0) for back in (3, 2, 1, 0)]
        obs = np.array(frames, np.float32).reshape(1, 4, 1, 1)
        return TimeStep(
            obs,
            np.ones((1, 2), np.bool_),
            np.zeros(1, np.int64),
            np.array([reward], np.float32),
            np.array([done]),
            np.zeros(1, np.bool_),
        )


def test_segments_carry_the_frames_that_complete_their_first_stacks():
    import torch

    from mbrl.networks.muzero import MuZeroNet
    from mbrl.selfplay.actor import SelfPlayActor
    from mbrl.selfplay.latent_model import LatentModel
    from search import SearchSettings

    torch.manual_seed(0)
    tiny = ModelConfig(channels=4, blocks=1, head_hidden=4, support_size=5, reward_support_size=5)
    net = MuZeroNet((4, 1, 1), 2, tiny).eval()
    algo = AlgoConfig(unroll_steps=2, td_steps=2, discount=0.9)
    actor = SelfPlayActor(
        CounterEnv(),
        LatentModel(net, discount=0.9, two_player=False),
        SearchSettings(num_simulations=2),
        seed=0,
        frame_channels=1,
        segment_length=5,
        segment_overlap=4,
        frame_stack=4,
    )
    buffer = EpisodeReplay(200, (4, 1, 1), np.float32, 2, algo, frame_stack=4, prioritized=False)
    while actor.episodes_finished == 0:
        for ep in actor.step():
            buffer.add(ep)
    mine = np.flatnonzero(buffer.sampleable[: buffer.total_added])
    assert len(mine) == CounterEnv.length and buffer.total_added > len(mine)
    targets = buffer.unroll(
        mine, np.ones(len(mine), np.float32), np.random.default_rng(0), future_obs=True
    )
    expected = [[max(t - back, 0) for back in (3, 2, 1, 0)] for t in range(CounterEnv.length)]
    np.testing.assert_array_equal(targets.obs.reshape(-1, 4), expected)
    inside = targets.policy_mask[:, 1:] > 0
    future = targets.future_obs.reshape(len(mine), 2, 4)[:, :, -1]
    np.testing.assert_array_equal(future[inside], (np.arange(20)[:, None] + [1, 2])[inside])


def test_reanalysis_refreshes_the_value_and_q_bootstraps_each_from_its_own_position():
    import torch

    from mbrl.selfplay.reanalyze import Reanalyzer
    from search import SearchSettings

    class PositionValues:  # the target network's value of position u: 1000 + u
        def values(self, obs):
            return obs[:, 0] + 1000.0

    algo = AlgoConfig(unroll_steps=3, td_steps=2, discount=0.5, q_td_steps=1)
    buffer = replay()
    buffer.algo = algo
    buffer.add(episode(6))  # obs of position u is u; rewards 1..6
    reanalyzer = Reanalyzer(
        torch.nn.Linear(1, 1), lambda net: PositionValues(), buffer, SearchSettings(), algo
    )
    targets = reanalyzer.targets(unroll_at(buffer, 2))
    assert targets.value[0].tolist() == [3 + 0.5 * 4 + 0.25 * 1004, 4 + 0.5 * 5 + 0.25 * 1005, 8, 6]
    assert targets.q_value[0].tolist() == [3 + 0.5 * 1003, 4 + 0.5 * 1004, 5 + 0.5 * 1005, 6]
    without_q = dataclasses.replace(algo, q_td_steps=0)
    buffer.algo = reanalyzer.algo = without_q
    assert reanalyzer.targets(unroll_at(buffer, 2)).q_value is None
