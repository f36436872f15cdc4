"""Self-play data diversity: random openings (trainer.random_opening_moves: each game starts from
0..N random legal moves, played at the reset without search, neither recorded nor counted, seeded
by the game id) and board-symmetry
augmentation (replay.augment_symmetries) wired into training."""

import numpy as np
import pytest
import torch

from games import BoardGame, BoardGameEnv
from mbrl.config import ModelConfig, TrainConfig, TrainerConfig
from mbrl.networks import AlphaZeroNet
from mbrl.networks.muzero import MuZeroNet
from mbrl.selfplay.actor import SelfPlayActor
from mbrl.selfplay.game_model import GameModel
from mbrl.selfplay.latent_model import LatentModel
from mbrl.selfplay.planner import opening_rng
from mbrl.validation import validate
from search import SearchSettings

GAME = BoardGame("tic_tac_toe")
OPENING = 3


def actor_for(model, num_games: int, openings: int) -> SelfPlayActor:
    return SelfPlayActor(
        BoardGameEnv(GAME, batch_size=num_games),
        model,
        SearchSettings(policy="gumbel", num_simulations=4),
        seed=5,
        two_player=True,
        temperature_moves=0,
        random_opening_moves=openings,
    )


def alphazero_actor(num_games: int, openings: int = OPENING) -> SelfPlayActor:
    torch.manual_seed(0)
    net = AlphaZeroNet(GAME.obs_shape, GAME.num_actions, channels=8, blocks=1).eval()
    return actor_for(GameModel(GAME, net), num_games, openings)


def latent_actor(openings: int = OPENING) -> SelfPlayActor:
    torch.manual_seed(0)
    tiny = ModelConfig(channels=4, blocks=1, head_hidden=4, support_size=1, reward_support_size=1)
    net = MuZeroNet(GAME.obs_shape, GAME.num_actions, tiny).eval()
    return actor_for(LatentModel(net, discount=1.0, two_player=True), 4, openings)


def histories(actor: SelfPlayActor) -> list[list[int]]:
    return [state.history() for state in actor.env.states]


def test_openings_are_seeded_by_game_id_and_span_zero_to_n_moves():
    wide, narrow = alphazero_actor(num_games=4), alphazero_actor(num_games=2)
    assert histories(wide)[:2] == histories(narrow)[:2]  # the same games whatever the batch
    assert wide.moves.tolist() == [len(h) for h in histories(wide)]  # move numbers count them
    env = BoardGameEnv(GAME, batch_size=1)
    lengths = set()
    for game_id in range(60):
        env.reset()
        played = env.play_opening(0, opening_rng(5, game_id), OPENING)
        moves = env.states[0].history()
        assert played == len(moves) and len(set(moves)) == len(moves)  # legal: no square twice
        lengths.add(played)
    assert lengths == set(range(OPENING + 1))
    assert histories(alphazero_actor(num_games=4, openings=0)) == [[]] * 4


def assert_recorded_from_the_end_of_openings(games) -> None:
    """Each recorded game (trajectory or episode) starts where its opening left off: its first
    position has as many empty squares fewer as opening moves were played, and their parity says
    who moves; some games had an opening and some did not."""
    first_filled = []
    for game in games:
        filled = 9 - int(game.legal[0].sum())
        assert filled <= OPENING
        assert game.to_play[0] == filled % 2
        assert len(game.actions) <= 9 - filled
        first_filled.append(filled)
    assert min(first_filled) == 0 and max(first_filled) > 0


def play(actor, count: int) -> list:
    finished = []
    while len(finished) < count:
        finished += actor.step()
    return finished


@pytest.mark.parametrize("make", [alphazero_actor, latent_actor], ids=["true_game", "latent"])
def test_opening_moves_are_neither_recorded_nor_counted(make):
    actor = make(num_games=8) if make is alphazero_actor else make()
    episodes = play(actor, 16)
    assert_recorded_from_the_end_of_openings(episodes)
    recorded = sum(len(e.actions) for e in episodes) + sum(len(r["actions"]) for r in actor.records)
    assert actor.moves_played == recorded


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match=r"trainer\.random_opening_moves must be >= 0"):
        validate(TrainConfig(trainer=TrainerConfig(random_opening_moves=-1)))
    cartpole = TrainConfig(trainer=TrainerConfig(random_opening_moves=2))
    cartpole.game.kind, cartpole.game.name, cartpole.algo.name = "classic", "CartPole-v1", "muzero"
    with pytest.raises(
        ValueError, match=r"random_opening_moves=2 needs game.kind=openspiel \| chess"
    ):
        validate(cartpole)
    pig = TrainConfig(trainer=TrainerConfig(random_opening_moves=2))
    pig.game.kind, pig.game.name, pig.algo.name = "chance", "pig", "stochastic_muzero"
    validate(pig)  # games of chance play openings too (exploring starts)
    pig.trainer.resign_threshold = 0.5
    with pytest.raises(
        ValueError, match=r"resign_threshold=0.5 needs game.kind=openspiel \| chess,"
    ):
        validate(pig)


def test_without_openings_every_game_starts_empty():
    actor = latent_actor(openings=0)
    episodes = play(actor, 4)
    assert all(e.legal[0].all() and e.to_play[0] == 0 for e in episodes)
    assert np.isfinite(actor.returns).all()


@pytest.mark.parametrize("algo", ["alphazero", "gumbel_muzero"])
def test_training_runs_with_openings_and_board_symmetries(tiny_config, tmp_path, algo):
    from mbrl.train import train

    summary = train(
        tiny_config(
            f"run_dir={tmp_path}",
            f"algo={algo}",
            "trainer.max_steps=6",
            "trainer.random_opening_moves=2",
            "replay.augment_symmetries=true",
            "eval.opponents=[random]",
        )
    )
    assert summary["steps"] == 6


def test_board_symmetries_for_a_game_without_them_are_refused(tiny_config, tmp_path):
    from mbrl.train import train

    config = tiny_config(
        f"run_dir={tmp_path}", "game=cartpole", "algo=muzero", "replay.augment_symmetries=true"
    )
    with pytest.raises(ValueError, match="declares no board symmetries; games that do"):
        train(config)


def test_games_of_chance_start_from_random_openings_too():
    from games.chance import ChanceGameEnv
    from tests.mbrl.test_stochastic_muzero import piglet_model

    game, model = piglet_model()
    actor = SelfPlayActor(
        ChanceGameEnv(game, batch_size=8),
        model,
        SearchSettings(num_simulations=4),
        seed=5,
        two_player=True,
        temperature_moves=0,
        random_opening_moves=6,
    )
    assert actor.moves.tolist() == actor.env.moves.tolist() and actor.moves.max() > 0
    start = game.observation(game.new_state())
    episodes = play(actor, 8)
    later_starts = [not np.array_equal(e.obs[0], start) for e in episodes]
    assert any(later_starts) and not all(later_starts)  # some games had an opening, some not
