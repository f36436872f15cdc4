"""Chess as tokens: a fixed-length board sequence and the 1,968 move tokens.

Moves. Every from-to pair that a queen or a knight can make on an empty board (1,456 + 336 =
1,792; castling is the king's two-square move, as UCI writes it), and the promotions: a pawn
on its seventh rank to the eighth, straight or diagonally (22 pairs per side), to each of the
four pieces (22 x 2 x 4 = 176). 1,792 + 176 = 1,968, the vocabulary of DeepMind's searchless
chess; Leela Chess Zero's 1,858 comes from flipping the board, which this encoding does not.
A promotion to a queen is a token of its own ("e7e8q"), distinct from the queen-like move
"e7e8" of a rook. Tokens are ordered by from square (a1, b1, ..., h8), then to square, the
promotions right after their from-to pair in the order q, r, b, n. UCI strings map one to one.

Board. ``BOARD_TOKENS`` positions, each one token of one vocabulary (`VOCAB_SIZE`), so a
transformer embeds them with one table plus positions:

    side to move | 64 squares a1..h8 | castling K Q k q | en passant | halfmove clock (2 digits,
    capped at 99) | fullmove number (3 digits, capped at 999) | repetitions (0, 1, 2+)
    | the last ``history`` moves (move tokens, newest last; padded with "no move")

The repetition count and the move history make repetitions and the fifty-move rule visible;
the square contents and rights alone are what DeepMind's 77-token FEN encoding holds.
"""

from __future__ import annotations

import functools

import chess
import numpy as np

PROMOTION_PIECES = "qrbn"
NUM_MOVES = 1968

# The board's token vocabulary: one id range per kind of position.
PIECES = ".PNBRQKpnbrqk"  # square contents: empty, white, black
SIDE_OFFSET = len(PIECES)  # white, black
RIGHT_OFFSET = SIDE_OFFSET + 2  # castling right absent, present
EN_PASSANT_OFFSET = RIGHT_OFFSET + 2  # squares 0..63, then "none"
DIGIT_OFFSET = EN_PASSANT_OFFSET + 65
REPETITION_OFFSET = DIGIT_OFFSET + 10  # 0, 1, 2 or more earlier occurrences
MOVE_OFFSET = REPETITION_OFFSET + 3  # history: move tokens, then "no move"
NO_MOVE = MOVE_OFFSET + NUM_MOVES
VOCAB_SIZE = NO_MOVE + 1
BASE_TOKENS = 1 + 64 + 4 + 1 + 2 + 3 + 1  # 76, without history


def board_tokens_length(history: int = 0) -> int:
    return BASE_TOKENS + history


def _reachable(start: int, end: int) -> bool:
    """A queen's or a knight's move on an empty board."""
    df = abs(chess.square_file(end) - chess.square_file(start))
    dr = abs(chess.square_rank(end) - chess.square_rank(start))
    queen = start != end and (df == 0 or dr == 0 or df == dr)
    return queen or {df, dr} == {1, 2}


def _promotes(start: int, end: int) -> bool:
    """A pawn's last step, for either side: rank 7 -> 8 or 2 -> 1, at most one file aside."""
    df = abs(chess.square_file(end) - chess.square_file(start))
    ranks = (chess.square_rank(start), chess.square_rank(end))
    return df <= 1 and ranks in ((6, 7), (1, 0))


@functools.cache
def move_vocabulary() -> tuple[str, ...]:
    """The 1,968 UCI strings, in token order."""
    moves = []
    for start in chess.SQUARES:
        for end in chess.SQUARES:
            if not _reachable(start, end):
                continue
            uci = chess.square_name(start) + chess.square_name(end)
            moves.append(uci)
            if _promotes(start, end):
                moves.extend(uci + piece for piece in PROMOTION_PIECES)
    assert len(moves) == NUM_MOVES, len(moves)
    return tuple(moves)


@functools.cache
def _move_index() -> dict[str, int]:
    return {uci: token for token, uci in enumerate(move_vocabulary())}


def move_to_token(move: chess.Move | str) -> int:
    """A move's token; a move outside the 1,968 (a null move, a Chess960 castling) is refused."""
    uci = move if isinstance(move, str) else move.uci()
    token = _move_index().get(uci)
    if token is None:
        raise ValueError(f"{uci!r} is not one of the {NUM_MOVES} chess move tokens")
    return token


def token_to_move(token: int) -> chess.Move:
    if not 0 <= token < NUM_MOVES:
        raise ValueError(f"move token must be in [0, {NUM_MOVES}), got {token}")
    return chess.Move.from_uci(move_vocabulary()[token])


def legal_mask(board: chess.Board) -> np.ndarray:
    """bool [1968]: the legal moves of ``board``."""
    mask = np.zeros(NUM_MOVES, dtype=bool)
    for move in board.legal_moves:
        mask[move_to_token(move)] = True
    return mask


def _digits(value: int, count: int) -> list[int]:
    value = min(value, 10**count - 1)
    return [DIGIT_OFFSET + int(d) for d in f"{value:0{count}d}"]


def board_to_tokens(board: chess.Board, history: int = 0) -> np.ndarray:
    """int64 [`board_tokens_length(history)`]: the position as tokens (see the module doc)."""
    tokens = [SIDE_OFFSET + (board.turn == chess.BLACK)]
    for square in chess.SQUARES:
        piece = board.piece_at(square)
        tokens.append(0 if piece is None else PIECES.index(piece.symbol()))
    for color, side in ((chess.WHITE, "king"), (chess.WHITE, "queen"), (chess.BLACK, "king"),
                        (chess.BLACK, "queen")):  # fmt: skip
        has = getattr(board, f"has_{side}side_castling_rights")(color)
        tokens.append(RIGHT_OFFSET + bool(has))
    # The en-passant square only when a capture there is legal (FEN's convention since 2020).
    square = board.ep_square if board.has_legal_en_passant() else None
    tokens.append(EN_PASSANT_OFFSET + (64 if square is None else square))
    tokens += _digits(board.halfmove_clock, 2) + _digits(board.fullmove_number, 3)
    tokens.append(REPETITION_OFFSET + _repetitions(board))
    if history:
        recent = [move_to_token(m) + MOVE_OFFSET for m in board.move_stack[-history:]]
        tokens += [NO_MOVE] * (history - len(recent)) + recent
    return np.asarray(tokens, dtype=np.int64)


def _repetitions(board: chess.Board) -> int:
    """Earlier occurrences of this position (0, 1, 2 or more: a third is a draw claim)."""
    if board.is_repetition(3):
        return 2
    return 1 if board.is_repetition(2) else 0


def tokens_to_board(tokens: np.ndarray) -> chess.Board:
    """The position a token sequence describes (pieces, side, rights, en passant, clocks);
    the history tokens are not replayed. For checks and for reading datasets."""
    tokens = [int(t) for t in tokens]
    board = chess.Board.empty()
    board.turn = tokens[0] == SIDE_OFFSET
    for square, token in enumerate(tokens[1:65]):
        if not 0 <= token < len(PIECES):
            raise ValueError(f"token {token} at square {chess.square_name(square)} is no piece")
        if token:
            board.set_piece_at(square, chess.Piece.from_symbol(PIECES[token]))
    rights = "".join(
        flag for flag, token in zip("KQkq", tokens[65:69], strict=True) if token - RIGHT_OFFSET
    )
    board.set_castling_fen(rights or "-")
    ep = tokens[69] - EN_PASSANT_OFFSET
    board.ep_square = None if ep == 64 else ep
    digits = [t - DIGIT_OFFSET for t in tokens[70:75]]
    board.halfmove_clock = digits[0] * 10 + digits[1]
    board.fullmove_number = digits[2] * 100 + digits[3] * 10 + digits[4]
    return board
