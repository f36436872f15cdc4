"""Chess with python-chess rules and the 1,968 move tokens, behind the board-game interface.

``ChessGame`` offers what `games.openspiel.BoardGame` offers (observations, legal masks,
clone-and-apply for the search, specs for checkpoints), so ``BoardGameEnv`` plays B games in
lockstep and AlphaZero's search uses the true rules, with actions that are move tokens
(`games.chess_tokens`) and observations that are board tokens (float32 holding the token ids,
as every observation is; the network embeds them). ``ChessState`` carries a ``chess.Board``
behind the few methods of an OpenSpiel state the framework calls.

A game ends at checkmate, stalemate, insufficient material, a third occurrence of a position or
fifty moves without a capture or pawn move (draws a player may claim: self-play claims them, as
engines do); ``max_moves`` cuts longer games (a draw for AlphaZero's targets).
"""

from __future__ import annotations

from typing import Any

import chess
import numpy as np

from games.chess_tokens import (
    NUM_MOVES,
    board_to_tokens,
    board_tokens_length,
    legal_mask,
    move_to_token,
    token_to_move,
)
from games.openspiel import Transition

TERMINAL = -4  # OpenSpiel's current_player() of a finished game


def _outcome(board: chess.Board) -> chess.Outcome | None:
    """The rules' ends, and a draw once a position occurred three times or fifty moves passed
    without a capture or a pawn move (python-chess's ``claim_draw`` also ends a game when a
    move *could* repeat a position, which would cut games the players meant to go on)."""
    outcome = board.outcome(claim_draw=False)
    if outcome is not None:
        return outcome
    if board.halfmove_clock >= 100:
        return chess.Outcome(chess.Termination.FIFTY_MOVES, None)
    if board.is_repetition(3):
        return chess.Outcome(chess.Termination.THREEFOLD_REPETITION, None)
    return None


class ChessState:
    """A position and how it was reached (repetitions need the moves)."""

    __slots__ = ("_outcome", "board")

    def __init__(self, board: chess.Board):
        self.board = board
        self._outcome: chess.Outcome | bool | None = False  # False: not computed yet

    def outcome(self) -> chess.Outcome | None:
        if self._outcome is False:
            self._outcome = _outcome(self.board)
        return self._outcome

    def is_terminal(self) -> bool:
        return self.outcome() is not None

    def is_chance_node(self) -> bool:  # chess has no chance
        return False

    def current_player(self) -> int:
        """0 for White, 1 for Black, `TERMINAL` once the game is over."""
        return TERMINAL if self.is_terminal() else int(self.board.turn == chess.BLACK)

    def returns(self) -> list[float]:
        """[White's, Black's]: +1 for the winner, -1 for the loser, 0 each for a draw."""
        outcome = self.outcome()
        if outcome is None or outcome.winner is None:
            return [0.0, 0.0]
        white = 1.0 if outcome.winner == chess.WHITE else -1.0
        return [white, -white]

    def legal_actions(self) -> list[int]:
        if self.is_terminal():
            return []
        return sorted(move_to_token(move) for move in self.board.legal_moves)

    def apply_action(self, action: int) -> None:
        move = token_to_move(int(action))
        if not self.board.is_legal(move):
            raise ValueError(f"move {move.uci()} (token {action}) is illegal in {self.board.fen()}")
        self.board.push(move)
        self._outcome = False

    def clone(self) -> ChessState:
        return ChessState(self.board.copy(stack=True))

    def action_to_string(self, player: int, action: int) -> str:
        del player
        return token_to_move(int(action)).uci()

    def child(self, action: int) -> ChessState:
        child = self.clone()
        child.apply_action(action)
        return child

    def history(self) -> list[int]:
        return [move_to_token(move) for move in self.board.move_stack]

    def __str__(self) -> str:
        return f"{self.board}\n{self.board.fen()}"


class ChessGame:
    """Chess as a board game of 1,968 actions; ``history`` plies of moves in the observation."""

    name = "chess_tokens"

    def __init__(self, params: dict[str, Any] | None = None, *, max_moves: int = 0):
        self.params = {"history": 0, **(params or {})}
        unknown = sorted(set(self.params) - {"history"})
        if unknown:
            raise ValueError(f"chess_tokens takes the parameter history, got {unknown}")
        self.history = int(self.params["history"])
        if self.history < 0:
            raise ValueError(f"chess_tokens history must be >= 0, got {self.history}")
        if max_moves < 0:
            raise ValueError(f"max_moves must be >= 0 (0 = the game's own limit), got {max_moves}")
        self.max_moves = int(max_moves) or 512  # plies; the 75-move rule ends games before
        self.num_actions = NUM_MOVES
        self.obs_shape: tuple[int, ...] = (board_tokens_length(self.history),)
        self.game = None  # no OpenSpiel game: opponents for chess are engines (Stockfish)

    def __repr__(self) -> str:
        return f"ChessGame({self.params})"

    @property
    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params,
            "num_actions": self.num_actions,
            "obs_shape": list(self.obs_shape),
        }

    def new_state(self, fen: str = chess.STARTING_FEN) -> ChessState:
        return ChessState(chess.Board(fen))

    def observation(self, state: ChessState) -> np.ndarray:
        return board_to_tokens(state.board, self.history).astype(np.float32)

    def legal_mask(self, state: ChessState) -> np.ndarray:
        if state.is_terminal():
            return np.zeros(self.num_actions, np.bool_)
        return legal_mask(state.board)

    def apply(self, state: ChessState, action: int) -> Transition:
        """Clone ``state`` and play ``action``; the parent is left as it was."""
        if state.is_terminal():
            raise ValueError(f"chess: cannot play action {action} in a finished game")
        mover = state.current_player()
        child = state.clone()
        child.apply_action(action)
        terminal = child.is_terminal()
        reward = float(child.returns()[mover]) if terminal else 0.0
        return Transition(child, reward, terminal, not terminal)

    def render(self, state: ChessState) -> str:
        return str(state)

    def action_to_string(self, state: ChessState, action: int) -> str:
        """The move in standard algebraic notation (``Nf3``, ``exd5``, ``O-O``, ``e8=Q+``)."""
        return state.board.san(token_to_move(int(action)))

    def action_aliases(self, state: ChessState, action: int) -> tuple[str, ...]:
        """Other names a player may type: UCI (``g1f3``)."""
        return (token_to_move(int(action)).uci(),)
