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
