"""The exact minimax solver on tic-tac-toe, checked against a memo-free reference search."""

from __future__ import annotations

import time

import numpy as np
import pyspiel
import pytest

from games.minimax import MinimaxSolver

TIC_TAC_TOE = pyspiel.load_game("tic_tac_toe")


@pytest.fixture(scope="module")
def solver() -> MinimaxSolver:
    return MinimaxSolver(TIC_TAC_TOE)


def state_after(moves: list[int]) -> pyspiel.State:
    state = TIC_TAC_TOE.new_initial_state()
    for move in moves:
        state.apply_action(move)
    return state


def reference_value(state: pyspiel.State, player: int) -> float:
    """Plain minimax over the move tree, no memo: slow but obviously right."""
    if state.is_terminal():
        return state.returns()[player]
    child_values = [reference_value(state.child(a), player) for a in state.legal_actions()]
    return max(child_values) if state.current_player() == player else min(child_values)


def test_tic_tac_toe_has_4520_reachable_nonterminal_states(solver):
    states = solver.nonterminal_states()
    assert len(states) == 4520
    assert not any(state.is_terminal() for state in states)
    assert len({(state.current_player(), str(state)) for state in states}) == 4520


def test_nonterminal_states_come_in_a_fixed_order(solver):
    again = MinimaxSolver(TIC_TAC_TOE).nonterminal_states()
    assert [str(s) for s in again] == [str(s) for s in solver.nonterminal_states()]


def test_solving_tic_tac_toe_is_fast():
    start = time.perf_counter()
    MinimaxSolver(TIC_TAC_TOE)
    assert time.perf_counter() - start < 2.0


def test_initial_position_is_a_draw(solver):
    initial = TIC_TAC_TOE.new_initial_state()
    assert solver.value(initial) == 0.0
    assert solver.optimal_actions(initial) == list(range(9))  # every opening move draws


def test_win_in_one_is_the_only_optimal_move(solver):
    state = state_after([0, 3, 1, 4])  # x on 0, 1; o on 3, 4 threatens 5; x to move
    assert solver.value(state) == 1.0
    assert solver.optimal_actions(state) == [2]


def test_every_immediate_win_is_optimal(solver):
    state = state_after([0, 2, 1, 3, 4, 5])  # x wins at 7 (1-4-7) or 8 (0-4-8)
    assert solver.optimal_actions(state) == [7, 8]


def test_value_is_for_the_player_to_move(solver):
    state = state_after([0, 3, 1])  # x on 0, 1 with a forced win; o to move
    assert state.current_player() == 1
    assert solver.value(state) == -1.0
    assert solver.value(state.child(2)) == 1.0  # turns alternate: the sign flips
    assert solver.optimal_actions(state) == state.legal_actions()  # every move loses equally


def test_values_and_optimal_actions_match_the_reference_search(solver):
    rng = np.random.default_rng(0)
    deep_states = [s for s in solver.nonterminal_states() if len(s.history()) >= 3]
    for index in rng.choice(len(deep_states), size=400, replace=False):
        state = deep_states[index]
        mover = state.current_player()
        best = reference_value(state, mover)
        assert solver.value(state) == best
        expected = [
            a for a in state.legal_actions() if reference_value(state.child(a), mover) == best
        ]
        assert solver.optimal_actions(state) == expected


def test_terminal_state_has_no_player_to_move(solver):
    finished = state_after([0, 3, 1, 4, 2])
    with pytest.raises(ValueError, match="terminal"):
        solver.value(finished)
    with pytest.raises(ValueError, match="terminal"):
        solver.optimal_actions(finished)


def test_connect_four_is_too_large_for_a_small_budget():
    with pytest.raises(ValueError, match=r"'connect_four' is too large.*max_states=1000.*mcts"):
        MinimaxSolver(pyspiel.load_game("connect_four"), max_states=1000)


def test_games_with_chance_or_hidden_information_are_refused():
    with pytest.raises(ValueError, match="'kuhn_poker' lacks: no chance nodes, perfect info"):
        MinimaxSolver(pyspiel.load_game("kuhn_poker"))
