"""The speed benchmark (`make search-demo`) runs: a smoke test so that it does not rot."""

from benchmarks import search_speed


def test_search_speed_quick_grid_prints_a_row_per_point(capsys):
    search_speed.main(
        [
            "--quick",
            "--models",
            "tabular",
            "--policies",
            "gumbel",
            "--budget",
            "0",
            "--reference-roots",
            "1",
            "--no-compile-times",
        ]
    )
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("gumbel")]
    assert len(rows) == 4
    assert all("mctx Gumbel" in row for row in rows)


def test_the_chess_benchmark_runs_every_stage_when_stockfish_is_installed(tmp_path, capsys):
    import pytest

    from benchmarks import chess
    from games.stockfish import find_stockfish

    try:
        find_stockfish()
    except ValueError:
        pytest.skip("Stockfish is not installed")
    chess.main(
        [
            "--positions", "300", "--nodes", "100", "--sl-minutes", "1", "--games", "2",
            "--simulations", "4", "--ladder", "1350", "--movetime", "5ms",
            "--puzzle-positions", "60", "--dir", str(tmp_path),
            "trainer.max_steps=4", "model.channels=16", "model.blocks=1", "model.heads=2",
            "eval.every=0", "eval.games=2", "eval.opponents=[random]", "trainer.progress_bar=false",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "search vs raw over 2 games" in out and "held-out labels at step 4" in out
    assert out.count("stockfish:1350/5ms") == 2 and "mate-in-1..3 puzzles" in out
