"""The 1,968 chess move tokens and the board tokens: every legal move of many random and tricky
positions maps into the vocabulary and back, and boards round-trip through their tokens."""

import random

import chess
import numpy as np
import pytest

from games.chess_tokens import (
    BASE_TOKENS,
    MOVE_OFFSET,
    NO_MOVE,
    NUM_MOVES,
    REPETITION_OFFSET,
    VOCAB_SIZE,
    board_to_tokens,
    legal_mask,
    move_to_token,
    move_vocabulary,
    token_to_move,
    tokens_to_board,
)

# Castling on both wings for both sides, en passant, promotions with and without capture for
# both colours, a position where an en-passant capture would expose the king (not legal).
TRICKY = [
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "1n2k3/P1P5/8/8/8/8/p6p/2K3N1 w - - 0 1",
    "1n2k3/P1P5/8/8/8/8/p6p/2K3N1 b - - 0 1",
    "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 1",
]


def random_positions(games: int, seed: int):
    """Every position of ``games`` random games (seeded), with the moves legal in each."""
    rng = random.Random(seed)
    for _ in range(games):
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 300:
            yield board
            board.push(rng.choice(list(board.legal_moves)))
        yield board


def test_the_vocabulary_holds_1968_distinct_moves_by_construction():
    moves = move_vocabulary()
    assert len(moves) == len(set(moves)) == NUM_MOVES == 1968
    promotions = [m for m in moves if len(m) == 5]
    assert len(promotions) == 176 and {m[4] for m in promotions} == set("qrbn")
    assert len(moves) - len(promotions) == 1456 + 336  # queen-like + knight-like pairs


@pytest.mark.parametrize("fen", TRICKY)
def test_every_legal_move_of_tricky_positions_maps_into_the_tokens_and_back(fen):
    board = chess.Board(fen)
    mask = legal_mask(board)
    assert mask.sum() == board.legal_moves.count()
    for move in board.legal_moves:
        token = move_to_token(move)
        assert mask[token] and token_to_move(token) == move


def test_tricky_positions_have_the_moves_they_were_chosen_for():
    tokens = {move_vocabulary()[t] for t in np.flatnonzero(legal_mask(chess.Board(TRICKY[0])))}
    assert {"e1g1", "e1c1"} <= tokens  # castling is the king's two-square move
    assert "e5f6" in {m.uci() for m in chess.Board(TRICKY[2]).legal_moves}  # en passant
    promotions = {m.uci() for m in chess.Board(TRICKY[3]).legal_moves if m.promotion}
    assert {"a7a8q", "a7a8n", "a7b8r", "c7c8b", "c7b8q"} <= promotions
    black = {m.uci() for m in chess.Board(TRICKY[4]).legal_moves if m.promotion}
    assert {"a2a1q", "h2h1n", "h2g1r", "h2g1b"} <= black
    assert "b5c6" not in {m.uci() for m in chess.Board(TRICKY[5]).legal_moves}  # pinned


def test_every_legal_move_of_random_games_maps_into_the_tokens_and_back():
    positions = moves = 0
    for board in random_positions(games=40, seed=0):
        mask = legal_mask(board)
        legal = list(board.legal_moves)
        assert mask.sum() == len(legal)
        assert all(token_to_move(move_to_token(m)) == m for m in legal)
        positions, moves = positions + 1, moves + len(legal)
    assert positions > 3000 and moves > 50000


@pytest.mark.parametrize("history", [0, 8])
def test_boards_round_trip_through_their_tokens(history):
    for board in [*random_positions(games=5, seed=1), *map(chess.Board, TRICKY)]:
        tokens = board_to_tokens(board, history=history)
        assert tokens.shape == (BASE_TOKENS + history,) and tokens.dtype == np.int64
        assert 0 <= tokens.min() and tokens.max() < VOCAB_SIZE
        assert tokens_to_board(tokens).fen() == board.fen()


def test_history_and_repetitions_are_visible():
    board = chess.Board()
    assert list(board_to_tokens(board, history=2)[-2:]) == [NO_MOVE, NO_MOVE]
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]  # back to the start: its second occurrence
    for uci in shuffle:
        board.push_uci(uci)
    tokens = board_to_tokens(board, history=2)
    assert tokens[BASE_TOKENS - 1] == REPETITION_OFFSET + 1
    assert list(tokens[-2:]) == [MOVE_OFFSET + move_to_token(u) for u in shuffle[-2:]]
    for uci in shuffle:
        board.push_uci(uci)
    assert board_to_tokens(board)[BASE_TOKENS - 1] == REPETITION_OFFSET + 2


@pytest.mark.parametrize("bad", ["0000", "e1e1", "a1b3q", "e2e4x", "", "z9a1"])
def test_moves_outside_the_vocabulary_are_refused(bad):
    with pytest.raises(ValueError, match="is not one of the 1968 chess move tokens"):
        move_to_token(bad)


@pytest.mark.parametrize("token", [-1, NUM_MOVES])
def test_tokens_outside_the_vocabulary_are_refused(token):
    with pytest.raises(ValueError, match=r"move token must be in \[0, 1968\)"):
        token_to_move(token)
