"""Self-play with the true game as the model (AlphaZero) on the one actor and the one replay."""

import copy

import numpy as np
import pytest
import torch

import search
from games import BoardGame, BoardGameEnv
from mbrl.agent import SearchAgent
from mbrl.config import AlgoConfig, TrainerConfig
from mbrl.networks import AlphaZeroNet
from mbrl.replay import EpisodeReplay
from mbrl.selfplay.actor import SelfPlayActor, played_move_values
from mbrl.selfplay.embedded import SelfPlayDataModule
from mbrl.selfplay.game_model import GameModel
from mbrl.selfplay.local_actors import LocalActors
from search import SearchSettings

GAME = BoardGame("tic_tac_toe")


def network(seed=0):
    torch.manual_seed(seed)
    return AlphaZeroNet(GAME.obs_shape, GAME.num_actions, channels=8, blocks=1).eval()


def actor(policy="puct", seed=0, num_games=4, **kwargs):
    return SelfPlayActor(
        BoardGameEnv(GAME, num_games),
        GameModel(GAME, network()),
        SearchSettings(policy=policy, num_simulations=8),
        seed=seed,
        two_player=True,
        temperature_moves=3,
        bootstrap_truncation=False,
        **kwargs,
    )


def data_module(net, settings, loop: TrainerConfig, algo: AlgoConfig) -> SelfPlayDataModule:
    """AlphaZero's data module on tic-tac-toe with the embedded backend's one actor."""
    actor_net = copy.deepcopy(net).eval().requires_grad_(False)
    selfplay = SelfPlayActor(
        BoardGameEnv(GAME, loop.num_games),
        GameModel(GAME, actor_net),
        settings,
        seed=0,
        two_player=True,
        temperature_moves=loop.temperature_moves,
        bootstrap_truncation=False,
    )
    return SelfPlayDataModule(
        LocalActors(selfplay, actor_net),
        net,
        lambda n: GameModel(GAME, n),
        settings,
        loop,
        algo,
        outcome_replay(),
        seed=0,
        two_player=True,
        outcome_targets=True,
    )


def histories(selfplay: SelfPlayActor) -> list[list[int]]:
    return [state.history() for state in selfplay.env.states]


def play(selfplay: SelfPlayActor, count: int) -> list:
    finished = []
    while len(finished) < count:
        finished += selfplay.step()
    return finished


def outcome_replay(capacity=1000) -> EpisodeReplay:
    """AlphaZero's view of the replay: K = 0, n covering the game, discount 1."""
    algo = AlgoConfig(unroll_steps=0, td_steps=GAME.max_moves, discount=1.0)
    return EpisodeReplay(
        capacity, GAME.obs_shape, np.float32, GAME.num_actions, algo, prioritized=False
    )


def searched(states: list, settings: SearchSettings) -> search.SearchOutput:
    model = GameModel(GAME, network())
    obs = np.stack([GAME.observation(s) for s in states])
    legal = np.stack([GAME.legal_mask(s) for s in states])
    root = model.search_root(states, obs)
    return search.run(root, model.recurrent_fn, settings, legal_mask=legal, deterministic=True)


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


def test_episodes_hold_legal_policies_and_the_outcome_for_the_player_to_move():
    for policy in ("puct", "gumbel"):
        for episode in play(actor(policy), 4):
            assert np.allclose(episode.policy.sum(1), 1, atol=1e-5)
            assert (episode.policy[~episode.legal] == 0).all()
            assert episode.legal[np.arange(len(episode.actions)), episode.actions].all()
            assert episode.to_play.tolist() == [t % 2 for t in range(len(episode.actions))]
            assert episode.terminated and not episode.rewards[:-1].any()
            replay = outcome_replay()
            replay.add(episode)
            length = len(episode.actions)
            targets = replay.unroll(np.arange(length), np.ones(length), np.random.default_rng())
            last = episode.rewards[-1]  # to the last mover
            mover_won = np.where(episode.to_play == episode.to_play[-1], last, -last)
            np.testing.assert_array_equal(targets.value[:, 0], mover_won)


def test_the_search_value_target_is_for_the_player_to_move_and_mixes_linearly():
    winning, losing = GAME.new_state(), GAME.new_state()
    for move in (0, 3, 1, 4):  # x to move, wins at 2
        winning.apply_action(move)
    for move in (0, 4, 1, 8, 3):  # o to move, x threatens 2 and 6
        losing.apply_action(move)
    for policy in ("puct", "gumbel"):
        output = searched([winning, losing], SearchSettings(policy=policy, num_simulations=64))
        values = played_move_values(output, output.action.astype(np.int64))
        # Same sign as the outcome of the player to move; the win is worth its full value.
        assert values[0] > 0.95 and values[1] < -0.5, values
    for weight in (0.0, 0.25, 1.0):
        net = network()
        settings = SearchSettings(policy="gumbel", num_simulations=8)
        data = data_module(
            net,
            settings,
            TrainerConfig(batch_size=64, warmup_moves=40, num_games=4),
            AlgoConfig(search_value_weight=weight),
        )
        batch = {k: v.numpy() for k, v in data.next_batch().items()}
        replay = data.replay
        outcome = replay.unroll(batch["indices"], batch["weights"], np.random.default_rng())
        move_value = replay.move_value[batch["indices"]]
        expected = (1 - weight) * outcome.value[:, 0] + weight * move_value
        np.testing.assert_allclose(batch["value"], expected, atol=1e-6)
        assert set(batch) == {"obs", "legal", "policy", "value", "weights", "indices"}


def test_same_seed_same_games_and_a_restored_actor_continues_them():
    first, second = actor(seed=3), actor(seed=3)
    for _ in range(4):
        first.step(), second.step()
    assert histories(first) == histories(second)
    restored = actor(seed=3)
    restored.load_state_dict(first.state_dict())
    assert histories(restored) == histories(first)
    for _ in range(6):
        a, b = first.step(), restored.step()
        assert [e.actions.tolist() for e in a] == [e.actions.tolist() for e in b]
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x.obs, y.obs)
            np.testing.assert_array_equal(x.policy, y.policy)
    other = actor(seed=4)
    other.step()
    assert histories(other) != histories(actor(seed=3))


def test_a_games_noise_does_not_depend_on_the_batch_size():
    small, large = actor(seed=5, num_games=2), actor(seed=5, num_games=6)
    for _ in range(3):
        small.step(), large.step()
    assert histories(small) == histories(large)[:2]


def test_resignation_is_off_by_default_and_the_previous_move_wins():
    assert actor().resign_threshold == -1.0
    resigning = actor(num_games=4, resign_threshold=0.99)
    finished = []
    for _ in range(3):
        finished += resigning.step()
    resigned = [e for e in finished if len(e.actions) <= 2]
    assert resigning.resignations > 0 and resigned
    for episode in resigned:
        assert episode.terminated and episode.rewards.tolist()[-1] == 1.0
        assert sorted(resigning.returns) and set(resigning.returns) <= {-1.0, 1.0}
    assert resigning.moves_played == sum(len(e.actions) for e in finished) + sum(
        len(r["actions"]) for r in resigning.records
    )  # a resignation is not a move
    with pytest.raises(ValueError, match=r"resign_threshold=0\.5 needs a two-player game"):
        SelfPlayActor(
            BoardGameEnv(GAME, 1),
            GameModel(GAME, network()),
            SearchSettings(),
            seed=0,
            resign_threshold=0.5,
        )


def test_a_game_cut_off_by_the_move_limit_is_a_draw():
    short = BoardGame("tic_tac_toe", max_moves=3)
    selfplay = SelfPlayActor(
        BoardGameEnv(short, 2),
        GameModel(short, network()),
        SearchSettings(num_simulations=4),
        seed=0,
        two_player=True,
        bootstrap_truncation=False,
    )
    episode = play(selfplay, 1)[0]
    assert len(episode.actions) == 3 and not episode.terminated and episode.final_value == 0.0
    replay = outcome_replay()
    replay.add(episode)
    targets = replay.unroll(np.arange(3), np.ones(3), np.random.default_rng())
    assert targets.value[:, 0].tolist() == [0.0, 0.0, 0.0]
    assert targets.value_mask[:, 0].tolist() == [1.0, 1.0, 1.0]


def test_puct_value_normalisation_is_selectable():
    state = GAME.new_state()
    for qtransform in ("parent_and_siblings", "tree_min_max"):
        settings = SearchSettings(num_simulations=8, qtransform=qtransform)
        assert searched([state], settings).visit_counts.sum() == 8
    with pytest.raises(ValueError, match="tree_min_max"):
        SearchSettings(qtransform="min")


def test_a_checkpoint_of_the_former_alphazero_loop_resumes_its_weights_and_counters():
    """Checkpoints written before one self-play stack stored positions and move lists: the
    weights and counters go on, the games restart and self-play refills the replay."""
    net = network()
    data = data_module(
        net,
        SearchSettings(num_simulations=4),
        TrainerConfig(batch_size=8, warmup_moves=30, num_games=2),
        AlgoConfig(),
    )
    former = {
        "actor_network": network(seed=1).state_dict(),
        "rng": np.random.default_rng(9).bit_generator.state,
        "gradient_steps": 12,
        "last_sync": 12,
        "replay": {"data": {"obs": torch.zeros(5, *GAME.obs_shape)}, "size": 5},
        "actor": {
            "history": [[0, 4], [8]],
            "next_game_id": 7,
            "moves_played": 40,
            "games_finished": 5,
            "simulations": 160,
        },
    }
    data.load_state_dict(former)
    selfplay = data.actors.actor
    assert (data.gradient_steps, selfplay.moves_played, selfplay.next_episode_id) == (12, 40, 9)
    assert data.refill_until == 70 and len(data.replay) == 0
    loaded = data.actors.network.state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in former["actor_network"].items())
    assert len(data.next_batch()["value"]) == 8


def test_a_checkpoint_with_an_illegal_game_in_progress_is_refused_naming_the_move():
    env = BoardGameEnv(GAME, 2)
    for bad in ([[0, 0], [1]], [[99], [1]]):
        with pytest.raises(ValueError, match=r"plays move (0|99) illegally"):
            env.load_state_dict({"histories": bad})
