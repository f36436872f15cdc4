"""Self-play on the batched search with the true game as the model."""

import numpy as np
import pytest
import torch

from games import BoardGame
from mbrl.agent import SearchAgent
from mbrl.networks import AlphaZeroNet
from mbrl.replay.targets import alphazero_positions
from mbrl.selfplay.actor import SelfPlayActor, played_move_values
from mbrl.selfplay.game_model import GameModel
from mbrl.selfplay.planner import plan
from search import SearchSettings

GAME = BoardGame("tic_tac_toe")


def network(seed=0):
    torch.manual_seed(seed)
    return AlphaZeroNet(GAME.obs_shape, GAME.num_actions, channels=8, blocks=1).eval()


def actor(policy="puct", seed=0, num_games=4):
    settings = SearchSettings(policy=policy, num_simulations=8)
    return SelfPlayActor(
        GAME,
        GameModel(GAME, network()),
        settings,
        num_games=num_games,
        temperature_moves=3,
        seed=seed,
    )


def test_search_with_the_true_game_finds_the_win_and_the_block():
    state = GAME.new_state()
    for move in (0, 3, 1, 4):  # x to move, wins at 2
        state.apply_action(move)
    blocking = GAME.new_state()
    for move in (0, 4, 1):  # o to move, must block at 2
        blocking.apply_action(move)
    for policy in ("puct", "gumbel"):
        settings = SearchSettings(policy=policy, num_simulations=64)
        agent = SearchAgent(GameModel(GAME, network().eval()), settings, game=GAME)
        assert agent.choose([state, blocking]).tolist() == [2, 2]


def test_trajectories_hold_legal_policies_and_outcomes_for_the_player_to_move():
    for policy in ("puct", "gumbel"):
        selfplay = actor(policy)
        finished = []
        while len(finished) < 4:
            finished += selfplay.step()
        for trajectory in finished:
            assert np.allclose(trajectory.policy.sum(1), 1, atol=1e-5)
            assert (trajectory.policy[~trajectory.legal] == 0).all()
            assert trajectory.legal[np.arange(len(trajectory.actions)), trajectory.actions].all()
            values = alphazero_positions(trajectory)["value"]
            assert np.array_equal(values, trajectory.returns[trajectory.to_play])
            assert trajectory.to_play.tolist() == [t % 2 for t in range(len(trajectory.actions))]


def test_the_search_value_target_is_for_the_player_to_move_and_mixes_linearly():
    winning, losing = GAME.new_state(), GAME.new_state()
    for move in (0, 3, 1, 4):  # x to move, wins at 2
        winning.apply_action(move)
    for move in (0, 4, 1, 8, 3):  # o to move, x threatens 2 and 6
        losing.apply_action(move)
    for policy in ("puct", "gumbel"):
        settings = SearchSettings(policy=policy, num_simulations=64)
        output = plan(GameModel(GAME, network()), [winning, losing], settings, deterministic=True)
        values = played_move_values(output, output.action.astype(np.int64))
        # Same sign as the outcome of the player to move; the win is worth its full value.
        assert values[0] > 0.95 and values[1] < -0.5, values
    finished = []
    selfplay = actor("gumbel")
    while not finished:
        finished += selfplay.step()
    trajectory = finished[0]
    outcome = trajectory.returns[trajectory.to_play]
    mixed = alphazero_positions(trajectory, search_value_weight=0.25)["value"]
    assert np.allclose(mixed, 0.75 * outcome + 0.25 * trajectory.move_value, atol=1e-6)
    searched = alphazero_positions(trajectory, search_value_weight=1.0)["value"]
    assert np.array_equal(searched, trajectory.move_value)


def test_same_seed_same_games_and_a_restored_actor_continues_them():
    first, second = actor(seed=3), actor(seed=3)
    for _ in range(4):
        first.step(), second.step()
    restored = actor(seed=3)
    restored.load_state_dict(first.state_dict())
    assert restored.history == first.history
    for _ in range(6):
        a, b = first.step(), restored.step()
        assert [t.actions.tolist() for t in a] == [t.actions.tolist() for t in b]
    assert actor(seed=4).step() is not None and first.history != actor(seed=4).history


def test_a_games_noise_does_not_depend_on_the_batch_size():
    small, large = actor(seed=5, num_games=2), actor(seed=5, num_games=6)
    for _ in range(3):
        small.step(), large.step()
    assert small.history == large.history[:2]


def test_resignation_is_off_by_default_and_ends_games_when_set():
    assert actor().resign_threshold == -1.0
    settings = SearchSettings(num_simulations=8)
    resigning = SelfPlayActor(
        GAME,
        GameModel(GAME, network()),
        settings,
        num_games=4,
        temperature_moves=3,
        seed=0,
        resign_threshold=0.99,
    )
    finished = []
    for _ in range(3):
        finished += resigning.step()
    resigned = [t for t in finished if len(t.actions) <= 2]
    assert resigning.resignations > 0 and resigned
    for trajectory in resigned:
        assert sorted(trajectory.returns.tolist()) == [-1.0, 1.0]


def test_puct_value_normalisation_is_selectable():
    state = GAME.new_state()
    model = GameModel(GAME, network())
    for qtransform in ("parent_and_siblings", "tree_min_max"):
        settings = SearchSettings(num_simulations=8, qtransform=qtransform)
        assert plan(model, [state], settings).visit_counts.sum() == 8
    with pytest.raises(ValueError, match="tree_min_max"):
        SearchSettings(qtransform="min")
