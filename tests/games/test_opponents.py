"""The fixed evaluation opponents, played against each other in lockstep batches of games."""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest

from games.minimax import MinimaxSolver
from games.opponents import (
    MCTSOpponent,
    MinimaxOpponent,
    OneStepLookaheadOpponent,
    Opponent,
    RandomOpponent,
    make_opponent,
)

TIC_TAC_TOE = pyspiel.load_game("tic_tac_toe")
CONNECT_FOUR = pyspiel.load_game("connect_four")


@pytest.fixture(scope="module")
def minimax() -> MinimaxOpponent:
    return MinimaxOpponent(TIC_TAC_TOE, MinimaxSolver(TIC_TAC_TOE))


def state_after(moves: list[int], game: pyspiel.Game = TIC_TAC_TOE) -> pyspiel.State:
    state = game.new_initial_state()
    for move in moves:
        state.apply_action(move)
    return state


def play(first: Opponent, second: Opponent, num_games: int, seed: int) -> list[pyspiel.State]:
    """Play ``num_games`` tic-tac-toe games in lockstep, ``first`` as player 0; the final states."""
    rng = np.random.default_rng(seed)
    states = [TIC_TAC_TOE.new_initial_state() for _ in range(num_games)]
    seats = (first, second)
    while not all(state.is_terminal() for state in states):
        for player, opponent in enumerate(seats):
            movers = [state for state in states if state.current_player() == player]
            if movers:
                actions = opponent.choose(movers, rng)
                for state, action in zip(movers, actions.tolist(), strict=True):
                    state.apply_action(action)
    return states


def returns_of(states: list[pyspiel.State], player: int) -> np.ndarray:
    return np.array([state.returns()[player] for state in states])


def test_every_opponent_satisfies_the_protocol(minimax):
    for opponent in (
        RandomOpponent(),
        OneStepLookaheadOpponent(),
        minimax,
        MCTSOpponent(TIC_TAC_TOE, 10),
    ):
        assert isinstance(opponent, Opponent)


def test_random_returns_legal_int64_actions_reproducibly():
    states = [state_after([]), state_after([4]), state_after([4, 0, 8])]
    actions = RandomOpponent().choose(states, np.random.default_rng(3))
    assert actions.dtype == np.int64 and actions.shape == (3,)
    assert all(a in s.legal_actions() for s, a in zip(states, actions.tolist(), strict=True))
    again = RandomOpponent().choose(states, np.random.default_rng(3))
    np.testing.assert_array_equal(actions, again)


def test_lookahead_takes_a_winning_move():
    states = [state_after([0, 3, 1, 4]) for _ in range(20)]  # x wins at 2, o threatens 5
    actions = OneStepLookaheadOpponent().choose(states, np.random.default_rng(0))
    assert actions.tolist() == [2] * 20


def test_lookahead_blocks_an_immediate_threat():
    states = [state_after([0, 4, 1]) for _ in range(20)]  # o to move, x threatens 2
    actions = OneStepLookaheadOpponent().choose(states, np.random.default_rng(0))
    assert actions.tolist() == [2] * 20


def test_lookahead_plays_at_random_without_threats():
    states = [state_after([]) for _ in range(50)]
    actions = OneStepLookaheadOpponent().choose(states, np.random.default_rng(0))
    assert len(set(actions.tolist())) > 3


def test_minimax_against_itself_always_draws_but_varies(minimax):
    finals = play(minimax, minimax, num_games=20, seed=0)
    np.testing.assert_array_equal(returns_of(finals, 0), np.zeros(20))
    assert len({tuple(state.history()) for state in finals}) > 1  # random among optimal moves


@pytest.mark.parametrize("minimax_seat", [0, 1])
def test_minimax_never_loses_to_random(minimax, minimax_seat):
    seats = (minimax, RandomOpponent()) if minimax_seat == 0 else (RandomOpponent(), minimax)
    finals = play(*seats, num_games=50, seed=minimax_seat)
    assert returns_of(finals, minimax_seat).min() >= 0.0


def test_minimax_takes_the_only_winning_move(minimax):
    state = state_after([0, 3, 1, 4])  # x wins at 2; anything else loses to o at 5
    actions = minimax.choose([state] * 10, np.random.default_rng(0))
    assert actions.tolist() == [2] * 10


def test_mcts_beats_random_as_first_player():
    finals = play(make_opponent("mcts:200", TIC_TAC_TOE), RandomOpponent(), num_games=10, seed=0)
    assert (returns_of(finals, 0) > 0).sum() >= 8


def test_mcts_moves_are_reproducible_from_the_rng():
    mcts = MCTSOpponent(TIC_TAC_TOE, num_simulations=20, seed=7)
    states = [state_after([]) for _ in range(8)]
    first = mcts.choose(states, np.random.default_rng(1))
    again = mcts.choose(states, np.random.default_rng(1))
    np.testing.assert_array_equal(first, again)


def test_mcts_plays_connect_four():
    mcts = MCTSOpponent(CONNECT_FOUR, num_simulations=50, seed=0)
    assert mcts.name == "mcts50"
    rng = np.random.default_rng(0)
    states = [CONNECT_FOUR.new_initial_state() for _ in range(3)]
    for _ in range(4):
        actions = mcts.choose(states, rng)
        assert actions.dtype == np.int64
        for state, action in zip(states, actions.tolist(), strict=True):
            assert action in state.legal_actions()
            state.apply_action(action)


def test_mcts_refuses_a_finished_game_instead_of_crashing():
    finished = state_after([0, 3, 1, 4, 2])
    with pytest.raises(ValueError, match="finished game"):
        MCTSOpponent(TIC_TAC_TOE, num_simulations=10).choose([finished], np.random.default_rng(0))


def test_make_opponent_builds_each_spec():
    names = [
        make_opponent(spec, TIC_TAC_TOE).name
        for spec in ("random", "lookahead", "minimax", "mcts:100")
    ]
    assert names == ["random", "lookahead", "minimax", "mcts100"]


@pytest.mark.parametrize("spec", ["bogus", "mcts", "Random", "checkpoint:model.ckpt"])
def test_make_opponent_rejects_an_unknown_spec(spec):
    with pytest.raises(
        ValueError, match=rf"unknown opponent spec '{spec}'.*'mcts:<N>'.*checkpoint:<path>"
    ):
        make_opponent(spec, TIC_TAC_TOE)


@pytest.mark.parametrize("count", ["0", "-3", "abc", "", "1.5"])
def test_make_opponent_rejects_a_bad_simulation_count(count):
    with pytest.raises(ValueError, match=rf"'mcts:{count}'.*positive int, got '{count}'"):
        make_opponent(f"mcts:{count}", TIC_TAC_TOE)


def test_mcts_opponent_rejects_a_non_positive_simulation_count():
    with pytest.raises(ValueError, match="num_simulations must be positive, got 0"):
        MCTSOpponent(TIC_TAC_TOE, num_simulations=0)
