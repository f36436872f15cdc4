"""Exact minimax for small two-player zero-sum deterministic perfect-information games.

The solver walks the whole game once, memoising one value per distinct position, so that an
evaluation opponent can play perfectly (tic-tac-toe: 5478 positions, a fraction of a second).
Positions are keyed by ``str(state)`` plus the player to move, not by the move history: the same
board reached by different move orders (a transposition) is one position. This key is exact for
games whose string shows the whole position (tic-tac-toe, connect four); games whose string
hides part of the state (repetition counters, say) are out of scope.
"""

from __future__ import annotations

import pyspiel


def _state_key(state: pyspiel.State) -> str:
    """One string per distinct position: the board and whose turn it is."""
    return f"{state.current_player()}\n{state}"


def _check_solvable(game: pyspiel.Game) -> None:
    """Raise unless minimax over ``returns()[0]`` is the exact value of ``game``."""
    game_type = game.get_type()
    name = game_type.short_name
    requirements = {
        "two players": game.num_players() == 2,
        "sequential moves": game_type.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL,
        "no chance nodes": game_type.chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC,
        "perfect information": game_type.information
        == pyspiel.GameType.Information.PERFECT_INFORMATION,
        "zero-sum utilities": game_type.utility == pyspiel.GameType.Utility.ZERO_SUM,
    }
    missing = [requirement for requirement, holds in requirements.items() if not holds]
    if missing:
        raise ValueError(
            f"MinimaxSolver needs a game with {', '.join(requirements)}; "
            f"{name!r} lacks: {', '.join(missing)}"
        )


class MinimaxSolver:
    """The exact game-theoretic value of every position reachable from the initial state.

    Values are kept from player 0's point of view (the game is zero-sum, so player 1's value is
    the negation) and are in the game's utility units, taken from ``state.returns()`` at terminals.
    The whole game is solved on construction, so a game that is too large fails early, before any
    evaluation starts.
    """

    def __init__(self, game: pyspiel.Game, max_states: int = 200_000):
        _check_solvable(game)
        self.game = game
        self.max_states = max_states
        self._player0_values: dict[str, float] = {}
        self._nonterminal_states: list[pyspiel.State] = []  # in discovery (DFS pre-) order
        self._keys_on_path: set[str] = set()
        self._solve(game.new_initial_state())

    def value(self, state: pyspiel.State) -> float:
        """The minimax value for the player to move in ``state`` (+1 win, 0 draw, -1 loss)."""
        self._check_has_mover(state)
        return self._value_for(state, state.current_player())

    def optimal_actions(self, state: pyspiel.State) -> list[int]:
        """Every legal action of ``state`` whose child keeps the minimax value for the mover."""
        self._check_has_mover(state)
        mover = state.current_player()
        best = self._value_for(state, mover)
        return [
            action
            for action in state.legal_actions()
            if self._value_for(state.child(action), mover) == best
        ]

    def nonterminal_states(self) -> list[pyspiel.State]:
        """One copy of every reachable non-terminal position, in a fixed (DFS discovery) order."""
        return [state.clone() for state in self._nonterminal_states]

    def _value_for(self, state: pyspiel.State, player: int) -> float:
        value0 = self._solve(state)
        return value0 if player == 0 else -value0

    def _check_has_mover(self, state: pyspiel.State) -> None:
        if state.is_terminal():
            raise ValueError(
                f"the state is terminal, so no player is to move; read state.returns() "
                f"instead. State:\n{state}"
            )

    def _solve(self, state: pyspiel.State) -> float:
        """Player 0's minimax value of ``state``, memoised; new positions are searched depth-first."""
        key = _state_key(state)
        known = self._player0_values.get(key)
        if known is not None:
            return known
        if key in self._keys_on_path:
            raise ValueError(
                f"{self.game.get_type().short_name!r} revisits a position on one line of play; "
                "MinimaxSolver only handles games whose positions never repeat"
            )
        self._count_new_state()
        if state.is_terminal():
            value0 = float(state.returns()[0])
        else:
            self._nonterminal_states.append(state.clone())  # the caller may mutate theirs
            self._keys_on_path.add(key)
            try:
                child_values = [self._solve(state.child(a)) for a in state.legal_actions()]
            finally:
                self._keys_on_path.discard(key)
            value0 = max(child_values) if state.current_player() == 0 else min(child_values)
        self._player0_values[key] = value0
        return value0

    def _count_new_state(self) -> None:
        num_states_met = len(self._player0_values) + len(self._keys_on_path) + 1
        if num_states_met > self.max_states:
            raise ValueError(
                f"game {self.game.get_type().short_name!r} is too large for exact minimax: "
                f"more than max_states={self.max_states} distinct states. Use the 'mcts:<N>' "
                "opponent (e.g. 'mcts:1000') instead, or raise max_states."
            )
