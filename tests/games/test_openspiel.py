"""The board-game protocol on OpenSpiel: shapes, perspective, rewards, termination, bad input."""

import numpy as np
import pytest

from games import TESTED_GAMES, BoardGame, BoardGameEnv

PARAMS = {"go": {"board_size": 9}}


@pytest.mark.parametrize("name", TESTED_GAMES)
def test_every_tested_game_steps_in_lockstep(name):
    game = BoardGame(name, PARAMS.get(name))
    env = BoardGameEnv(game, batch_size=3)
    step = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(4):
        assert step.obs.shape == (3, *game.obs_shape) and step.obs.dtype == np.float32
        assert step.legal.shape == (3, game.num_actions) and step.legal.dtype == np.bool_
        assert step.legal.any(axis=1).all()
        actions = [rng.choice(np.flatnonzero(legal)) for legal in step.legal]
        step = env.step(actions)
    assert (step.to_play >= 0).all() and not step.done.any()


def test_tic_tac_toe_observation_is_from_the_player_to_move():
    game = BoardGame("tic_tac_toe")
    state = game.new_state()
    state.apply_action(4)  # x in the centre; o to move
    obs = game.observation(state)
    # Plane 2 holds the mover's stones and plane 1 the opponent's, whoever moves.
    assert obs[1, 1, 1] == 1 and obs[2].sum() == 0
    state.apply_action(0)  # o in the corner; x to move
    obs = game.observation(state)
    assert obs[2, 1, 1] == 1 and obs[1, 0, 0] == 1


def test_other_games_get_a_to_play_plane():
    game = BoardGame("breakthrough")
    state = game.new_state()
    assert game.observation(state)[-1].max() == 0
    state.apply_action(state.legal_actions()[0])
    assert game.observation(state)[-1].min() == 1


def test_reward_goes_to_the_mover_and_finished_games_wait_for_reset():
    game = BoardGame("tic_tac_toe")
    env = BoardGameEnv(game, batch_size=2)
    env.reset()
    for x, o in [(0, 3), (1, 4)]:
        env.step([x, x])
        env.step([o, o])
    step = env.step([2, 8])  # game 0: x completes the top row; game 1 goes on
    assert step.terminated.tolist() == [True, False]
    assert step.reward.tolist() == [1.0, 0.0]
    assert step.to_play.tolist() == [-1, 1]
    step = env.step([0, 5])  # game 0 is finished: its action is ignored
    assert step.terminated[0] and step.reward[0] == 0
    step = env.reset(indices=[0])
    assert not step.terminated[0] and step.legal[0].all()


def test_move_limit_truncates():
    env = BoardGameEnv(BoardGame("tic_tac_toe", max_moves=2), batch_size=1)
    env.reset()
    env.step([0])
    step = env.step([1])
    assert step.truncated[0] and not step.terminated[0]


def test_reset_indices_must_be_slot_numbers():
    env = BoardGameEnv(BoardGame("tic_tac_toe"), batch_size=2)
    with pytest.raises(ValueError, match="flatnonzero"):
        env.reset(indices=np.array([True, False]))
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        env.reset(indices=[2])


def test_negative_move_limit_is_refused():
    with pytest.raises(ValueError, match="max_moves must be >= 0"):
        BoardGame("tic_tac_toe", max_moves=-1)


def test_illegal_action_is_named():
    env = BoardGameEnv(BoardGame("tic_tac_toe"), batch_size=1)
    env.reset()
    env.step([4])
    with pytest.raises(ValueError, match="action 4 is illegal"):
        env.step([4])


def test_apply_leaves_the_parent_untouched():
    game = BoardGame("connect_four")
    parent = game.new_state()
    transition = game.apply(parent, 3)
    assert str(parent) != str(transition.state) and transition.turn_changed
    assert parent.move_number() == 0


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("kuhn_poker", "chance nodes"),
        ("goofspiel", "simultaneous"),
        ("leduc_poker", "hidden information"),
        ("kuhn_poker(players=3)", "3 players"),
    ],
)
def test_games_outside_the_class_are_refused_with_the_reason(name, reason):
    base, _, args = name.partition("(")
    params = dict(kv.split("=") for kv in args.rstrip(")").split(",")) if args else {}
    params = {k: int(v) for k, v in params.items()}
    with pytest.raises(ValueError, match=reason):
        BoardGame(base, params)


def test_bad_parameters_are_reported():
    with pytest.raises(ValueError, match="board_size"):
        BoardGame("go", {"board_size": "nine"})
