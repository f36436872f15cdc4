"""Stockfish's labels: win probabilities from scores, a file written once and reused, the same
file from the same seed, and hostile files refused. Engine tests skip without Stockfish."""

import chess
import chess.engine
import numpy as np
import pytest

from games.chess_labels import load_labels, main, win_probability
from games.chess_tokens import token_to_move
from games.stockfish import stockfish_installed

needs_stockfish = pytest.mark.skipif(not stockfish_installed(), reason="Stockfish is not installed")


def test_scores_become_win_probabilities_for_the_side_to_move():
    even = chess.engine.PovScore(chess.engine.Cp(0), chess.WHITE)
    ahead = chess.engine.PovScore(chess.engine.Cp(250), chess.WHITE)
    mated = chess.engine.PovScore(chess.engine.Mate(-2), chess.BLACK)
    assert win_probability(even, chess.BLACK) == 0.5
    assert win_probability(ahead, chess.WHITE) == pytest.approx(1 / (1 + np.exp(-1)))
    assert win_probability(ahead, chess.BLACK) == pytest.approx(1 / (1 + np.exp(1)))
    assert win_probability(mated, chess.BLACK) == 0.0 and win_probability(mated, chess.WHITE) == 1.0


def test_hostile_or_foreign_files_are_refused(tmp_path):
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, tokens=np.array([{"run": "code"}], dtype=object))
    with pytest.raises(ValueError, match="is not a readable chess label file"):
        load_labels(pickled)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"PK\x03\x04 not a zip at all")
    with pytest.raises(ValueError, match="is not a readable chess label file"):
        load_labels(garbage)
    other = tmp_path / "other.npz"
    np.savez(other, weights=np.zeros(3))
    with pytest.raises(ValueError, match="is not a chess label file"):
        load_labels(other)


@needs_stockfish
def test_labels_are_written_once_reused_and_reproducible(tmp_path, capsys):
    args = ["--positions", "30", "--nodes", "200", "--history", "2"]
    main([*args, "--out", str(tmp_path / "a.npz")])
    main([*args, "--out", str(tmp_path / "b.npz")])
    first, second = load_labels(tmp_path / "a.npz"), load_labels(tmp_path / "b.npz")
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    assert first["tokens"].shape == (30, 78)
    for fen, move in zip(first["fen"], first["move"], strict=True):
        assert chess.Board(str(fen)).is_legal(token_to_move(int(move)))
    assert ((first["win_probability"] >= 0) & (first["win_probability"] <= 1)).all()
    main([*args, "--out", str(tmp_path / "a.npz")])
    assert "already holds these labels: reused" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stopped:
        main(["--positions", "31", "--nodes", "200", "--out", str(tmp_path / "a.npz")])
    assert stopped.value.code == 1
    assert "pass --overwrite to replace it" in capsys.readouterr().err
