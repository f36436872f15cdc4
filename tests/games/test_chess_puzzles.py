"""Chess puzzles: forced mates found by Stockfish, and a judge that accepts every move keeping
the mate (a mate in one must mate). Engine tests skip without Stockfish."""

import chess
import chess.engine
import numpy as np
import pytest

from games.chess_labels import write_atomically
from games.chess_puzzles import PuzzleJudge, accuracy, find_puzzles, load_puzzles
from games.chess_tokens import move_to_token
from games.stockfish import find_stockfish, stockfish_installed

needs_stockfish = pytest.mark.skipif(not stockfish_installed(), reason="Stockfish is not installed")

MATE_IN_ONE = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8#
MATE_IN_TWO = "k7/8/2K5/8/8/8/8/7R w - - 0 1"  # Kb6 (or others), then Rh8#
QUIET = "4k3/8/8/8/8/8/8/4K3 w - - 0 1"


def test_a_mate_in_one_is_solved_only_by_mating():
    judge = PuzzleJudge()
    mate = chess.Move.from_uci("a1a8")
    assert judge.solves(MATE_IN_ONE, mate, mate, 1)
    assert not judge.solves(MATE_IN_ONE, chess.Move.from_uci("a1a7"), mate, 1)
    assert not judge.solves(MATE_IN_ONE, chess.Move.from_uci("e2e4"), mate, 1)  # illegal


def test_without_an_engine_a_longer_mate_needs_stockfishs_move():
    judge, solution = PuzzleJudge(), chess.Move.from_uci("c6b6")
    assert judge.solves(MATE_IN_TWO, solution, solution, 2)
    assert not judge.solves(MATE_IN_TWO, chess.Move.from_uci("h1h2"), solution, 2)


@needs_stockfish
def test_stockfish_finds_the_mates_and_the_judge_accepts_every_move_that_keeps_one(tmp_path):
    puzzles = find_puzzles([MATE_IN_ONE, MATE_IN_TWO, QUIET], nodes=20000, max_mate=3)
    assert list(puzzles["mate"]) == [1, 2] and str(puzzles["fen"][1]) == MATE_IN_TWO
    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish())
    try:
        judge = PuzzleJudge(engine)
        solution = chess.Move.from_uci("c6b6")
        board = chess.Board(MATE_IN_TWO)
        keeping = [m for m in board.legal_moves if judge.solves(MATE_IN_TWO, m, solution, 2)]
        assert solution in keeping and chess.Move.from_uci("h1h2") not in keeping
        path = tmp_path / "puzzles.npz"
        write_atomically(path, **puzzles)
        loaded = load_puzzles(path)
        always_best = [int(m) for m in loaded["move"]]
        assert accuracy(lambda fens: always_best, loaded, judge) == 1.0
        assert (
            accuracy(lambda fens: [move_to_token("a1a2"), move_to_token("h1h2")], loaded, judge)
            == 0.0
        )
    finally:
        engine.quit()


def test_a_foreign_file_is_refused(tmp_path):
    other = tmp_path / "other.npz"
    np.savez(other, weights=np.zeros(2))
    with pytest.raises(ValueError, match="is not a puzzle file"):
        load_puzzles(other)
