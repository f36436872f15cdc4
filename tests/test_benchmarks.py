"""The speed benchmark (`make search-demo`) runs: a smoke test so that it does not rot."""

import json
import re
from pathlib import Path

import pytest

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

    from benchmarks import chess
    from games.stockfish import find_stockfish

    try:
        find_stockfish()
    except ValueError:
        pytest.skip("Stockfish is not installed")
    chess.main(
        [
            "--positions", "300", "--nodes", "100", "--sl-minutes", "1", "--games", "2",
            "--duel-games", "2",
            "--simulations", "4", "--ladder", "1350", "--movetime", "5ms",
            "--puzzle-positions", "60", "--dir", str(tmp_path),
            "trainer.max_steps=4", "model.channels=16", "model.blocks=1", "model.heads=2",
            "eval.every=0", "eval.games=2", "eval.opponents=[random]", "trainer.progress_bar=false",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "search vs raw over 2 games" in out and "held-out labels at step 4" in out
    assert out.count("stockfish:1350/5ms") == 2 and "mate-in-1..3 puzzles" in out


TINY_LM = [
    "model.layers=1", "model.width=16", "model.heads=2", "llm.pretrain_steps=10",
    "trainer.batch_size=16", "logger.tensorboard=false", "llm.eval_prompts=8",
]  # fmt: skip


def test_the_method_comparison_fills_its_grid_resumes_and_reports(tmp_path, capsys):
    from benchmarks import countdown_methods

    argv = [
        "--tasks", "countdown24", "--methods", "distill,sft_verified,reinforce",
        "--seeds", "0,1", "--results", str(tmp_path / "runs.jsonl"),
        "--run-root", str(tmp_path), "--plot", str(tmp_path / "plot.png"), *TINY_LM,
        "llm.round_steps=2",  # after the protocol, so it also holds for REINFORCE
        "--protocol", "llm.round_prompts=8", "llm.rounds=1", "search.num_simulations=2",
    ]  # fmt: skip
    countdown_methods.main(argv)
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 6
    out = capsys.readouterr().out
    assert "reinforce" in out and "ahead on" in out and (tmp_path / "plot.png").exists()
    countdown_methods.main(argv)  # everything is there: nothing runs again
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 6
    assert "countdown24 distill seed 0" not in capsys.readouterr().out


def test_the_method_comparison_matches_a_given_budget_without_a_distill_run(tmp_path, capsys):
    """``--budget``: SFT's samples are calibrated to it and the search SFT's searches fill it;
    the searches SFT needs no samples, only the budget (recorded with each row)."""
    from benchmarks import countdown_methods

    argv = [
        "--tasks", "countdown24", "--methods", "search_sft,sft_verified", "--seeds", "0",
        "--budget", "60", "--results", str(tmp_path / "runs.jsonl"), "--run-root",
        str(tmp_path), "--plot", "", *TINY_LM, "llm.round_steps=2",
        "--protocol", "llm.round_prompts=8", "llm.rounds=1", "search.num_simulations=2",
    ]  # fmt: skip
    countdown_methods.main(argv)
    rows = {r["method"]: r for r in map(json.loads, (tmp_path / "runs.jsonl").open())}
    assert set(rows) == {"search_sft", "sft_verified"}
    assert all(row["budget"] == 60 for row in rows.values())
    searched = rows["search_sft"]["rounds"][0]
    assert searched["searches_per_prompt"] >= 1 and searched["examples"] > 0
    assert "budget 60" in capsys.readouterr().out  # SFT's calibration aimed at it
    with pytest.raises(SystemExit, match="run distill first"):
        countdown_methods.main([*argv[:4], "--seeds", "1", *argv[8:]])  # no --budget
    for bad in ("0", "-5", "many"):
        with pytest.raises(SystemExit):  # argparse's one-line error, status 2
            countdown_methods.main(["--report", "--budget", bad])
        assert f"must be a whole number of passes >= 1, got '{bad}'" in capsys.readouterr().err


def test_the_method_comparison_warns_when_its_rows_start_from_different_models(tmp_path, capsys):
    from benchmarks import countdown_methods

    rounds = [{"data_passes": 10, "test_greedy_accuracy": 0.2}]
    rows = [
        {"task": "countdown24", "method": method, "seed": 0, "start_accuracy": start,
         "rounds": rounds}
        for method, start in (("search_sft", 0.118), ("sft_verified", 0.099))
    ]  # fmt: skip
    results = tmp_path / "runs.jsonl"
    results.write_text("".join(json.dumps(row) + "\n" for row in rows))
    countdown_methods.main(["--report", "--results", str(results), "--plot", ""])
    assert "rows from different starts (0.0990, 0.1180)" in capsys.readouterr().out


def test_the_method_comparison_retrains_a_lost_teacher_and_checks_it_against_its_record(
    tmp_path, capsys
):
    import shutil

    from benchmarks import countdown_methods

    argv = [
        "--tasks", "countdown24", "--seeds", "0", "--results", str(tmp_path / "runs.jsonl"),
        "--run-root", str(tmp_path), "--plot", "", *TINY_LM, "llm.round_steps=2",
        "--protocol", "llm.round_prompts=8", "llm.rounds=1", "search.num_simulations=2",
    ]  # fmt: skip
    countdown_methods.main(["--methods", "distill", *argv])
    shutil.rmtree(tmp_path / "countdown24_distill_s0")  # run directories are not in git
    countdown_methods.main(["--methods", "opd_teacher", *argv])
    out = capsys.readouterr().out
    assert "the teacher" in out and "reproduces its record" in out
    assert (tmp_path / "countdown24_distill_s0" / "checkpoints" / "last.ckpt").exists()
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [row["method"] for row in rows] == ["distill", "opd_teacher"]
    # A teacher stopped before its last round is finished first, not read as it is.
    (tmp_path / "runs.jsonl").write_text(json.dumps(rows[0]) + "\n")
    teacher_rounds = tmp_path / "countdown24_distill_s0" / "rounds.jsonl"
    teacher_rounds.write_text('{"round": 1, "test_gr')  # killed while appending round 1
    countdown_methods.main(["--methods", "opd_teacher", *argv])
    assert "missing or unfinished" in capsys.readouterr().out
    # A record the retrained teacher does not match is reported, not passed over.
    rows[0]["rounds"][0]["test_greedy_accuracy"] += 0.5
    (tmp_path / "runs.jsonl").write_text(json.dumps(rows[0]) + "\n")
    shutil.rmtree(tmp_path / "countdown24_distill_s0")
    countdown_methods.main(["--methods", "opd_teacher", *argv])
    assert "DIFFERS from its record" in capsys.readouterr().out


def test_the_tiny_lm_cache_benchmark_times_both_modes_on_the_same_outputs(capsys):
    from benchmarks import tiny_lm_cache

    tiny_lm_cache.main(["--prompts", "3", "--samples", "2", "--simulations", "2", "--repeats", "1"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if "kv cache" in line]
    assert len(rows) == 2 and all(row[-1] == "yes" for row in rows)


def test_the_reward_model_benchmark_prints_its_three_tables(tmp_path, capsys):
    from benchmarks import reward_model

    reward_model.main(
        [
            "--run-dir", str(tmp_path / "pre"), "--prompts", "4", "--max-n", "2",
            "--steps", "5", "--per-puzzle", "1", "--weak-steps", "3", "--weak-per-puzzle", "1",
            "--members", "2", "--calibration-prompts", "4", "--simulations", "2",
            "--plot", str(tmp_path / "plot.png"), *TINY_LM,
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "complete" in out and "exact verifier" in out and "weak + value" in out
    assert "weak ensemble" in out and (tmp_path / "plot.png").exists()


def test_the_reinforce_baselines_benchmark_measures_each_baselines_variance(tmp_path, capsys):
    from benchmarks import reinforce_baselines

    reinforce_baselines.main(
        [
            "--seeds", "0", "--steps", "3", "--samples", "2", "--run-root", str(tmp_path),
            "--warmup-steps", "20",
            *TINY_LM, "logger.tensorboard=true", "trainer.log_every=1", "llm.round_prompts=8",
        ]
    )  # fmt: skip
    rows = capsys.readouterr().out.split("solve rate")[1].splitlines()[2:]
    assert [row.split()[0] for row in rows] == ["value", "group_mean", "none", "value+warmup"]
    # The tiny model solves nothing: every reward is 0, so without a baseline there is no
    # gradient at all, while the value baseline's advantage (0 - value) still pushes. Refitted
    # to this round's outcomes first, the baseline starts nearer 0, and pushes less.
    variances = {row.split()[0]: float(row.split()[2]) for row in rows}
    assert variances["none"] == 0 and variances["group_mean"] == 0 and variances["value"] > 0
    assert 0 < variances["value+warmup"] < variances["value"]
    rounds = (tmp_path / "reinforce_value_warmup20_s0" / "rounds.jsonl").read_text()
    record = json.loads(rounds.splitlines()[-1])
    assert record["warmup_success"] == 0
    assert record["warmup_value_after"] < record["warmup_value_before"]


def test_the_chance_agents_benchmark_scores_piglet_and_reads_back_the_learned_coin(
    tmp_path, capsys
):
    from benchmarks import chance_agents

    out = tmp_path / "piglet.jsonl"
    chance_agents.main(
        ["--game", "piglet", "--run-root", str(tmp_path), "--out", str(out), "debug=tiny",
         "algo.chance_codes=4"]
    )  # fmt: skip
    printed = capsys.readouterr().out
    rows = printed.split("optimal_share win_vs_optimal")[1].splitlines()[1:3]
    assert [row.split()[0] for row in rows] == ["stochastic_muzero", "chance_alphazero"]
    assert "sigma implies P(heads)" in printed
    assert (tmp_path / "piglet.png").exists()
    records = [line for line in out.read_text().splitlines() if line]
    assert len(records) == 2 and '"outcomes_told_apart"' in records[0]


def test_the_2048_reward_fit_uses_the_preset_network_and_reports_each_torso(capsys):

    from benchmarks import game2048_reward_fit

    assert game2048_reward_fit.preset_model("lines").torso == "lines"
    assert game2048_reward_fit.preset_model("mlp").reward_support_size == 20  # the YAML's
    game2048_reward_fit.main(["--positions", "200", "--updates", "2", "--report-every", "1"])
    rows = capsys.readouterr().out.split("seconds")[1].split()
    assert rows[0::5] == ["mlp", "mlp", "lines", "lines"]
    assert rows[1::5] == ["1", "2", "1", "2"]
    with pytest.raises(SystemExit):
        game2048_reward_fit.main(["--torsos", "conv"])


def test_the_tree_reuse_benchmark_counts_what_each_search_leaves_to_the_next(tmp_path, capsys):
    from benchmarks import countdown_tree_reuse

    countdown_tree_reuse.main(
        ["--run-dir", str(tmp_path / "pre"), "--prompts", "3", "--budgets", "4",
         "--considered", "2", *TINY_LM]
    )  # fmt: skip
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    rows = {row[0]: row for row in rows if row and row[0] in ("mcts", "gumbel")}
    assert set(rows) == {"mcts", "gumbel"}
    for row in rows.values():
        new_passes, kept, simulations = float(row[-4]), float(row[-2]), 4
        assert 0 <= new_passes <= simulations and 0 <= kept <= simulations


def test_a_subtree_counts_its_root_and_every_descendant():
    import numpy as np

    from benchmarks.countdown_tree_reuse import subtree_size

    children = np.full((1, 5, 3), -1)  # root 0 -> 1, 2; 1 -> 3 -> 4
    children[0, 0, :2] = [1, 2]
    children[0, 1, 0] = 3
    children[0, 3, 2] = 4
    tree = type("Tree", (), {"children_index": children})
    assert [subtree_size(tree, 0, n) for n in range(5)] == [5, 3, 1, 2, 1]


def test_the_pig_value_benchmark_scores_the_search_the_value_head_and_the_exact_check(
    tmp_path, capsys
):
    from benchmarks import chance_agents, pig_value_choices

    chance_agents.main(
        ["--game", "piglet", "--algos", "stochastic_muzero", "--run-root", str(tmp_path),
         "--out", str(tmp_path / "piglet.jsonl"), "debug=tiny", "algo.chance_codes=4"]
    )  # fmt: skip
    capsys.readouterr()
    run = str(tmp_path / "piglet_stochastic_muzero_seed0")
    pig_value_choices.main([run, "--simulations", "4"])
    printed = capsys.readouterr().out
    shares = {
        line.split(",")[0]: [float(x) for x in line.split()[-3:]]
        for line in printed.splitlines()
        if line.startswith(("search", "value head", "afterstate Q", "exact values"))
    }
    assert len(shares) == 4 and shares["exact values"] == [1.0, 1.0, 0.5]
    assert all(0.0 <= share <= 1.0 for row in shares.values() for share in row)
    assert "mistakes by turn total" in printed and "mean error by turn total" in printed
    # The same network, fitted to the exact values, can choose (nearly) every move right.
    from benchmarks import pig_value_capacity

    pig_value_capacity.main([run, "--noise", "0", "--steps", "600", "--lr", "0.01"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    own = next(row for row in rows if row[:2] == ["the", "run's"])
    fitted = next(row for row in rows if row[:1] == ["fitted"])
    assert float(fitted[-4]) < float(own[-4]) / 5  # mean |error|: 0.04 against 0.56
    assert float(fitted[-3]) > 0.8 > float(own[-3])  # optimal share: 0.91 against 0.36


def test_the_pig_value_benchmark_scores_a_runs_tree_value_table(tmp_path, capsys):
    import torch

    from benchmarks import chance_agents, pig_value_choices

    chance_agents.main(
        ["--game", "piglet", "--algos", "chance_alphazero", "--run-root", str(tmp_path),
         "--out", str(tmp_path / "piglet.jsonl"), "debug=tiny", "search.policy=gumbel",
         "search.num_simulations=8", "algo.tree_value_weight=1", "algo.tree_value_searches=4"]
    )  # fmt: skip
    capsys.readouterr()
    run = tmp_path / "piglet_chance_alphazero_seed0"
    pig_value_choices.main([str(run), "--simulations", "4"])
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.startswith("the tree value table"))
    valued, positions = (int(x) for x in line.split()[4:7:2])
    assert 0 < valued <= positions
    errors = [float(x.rstrip(",")) for x in line.split()[-9::4]]
    # (a 20-update network on debug=tiny's wide support: its values are not yet in [-1, 1])
    assert len(errors) == 3 and all(0 <= e < 100 for e in errors), line
    worst = [x for x in printed.splitlines() if x.startswith("  (")]
    assert len(worst) == min(5, valued)
    # a table whose history plays an illegal move is refused in one line
    path = run / "checkpoints" / "last.ckpt"
    checkpoint = torch.load(path, weights_only=False)
    checkpoint["SelfPlayDataModule"]["tree_values"]["histories"][0] = [0, 7]
    torch.save(checkpoint, path)
    with pytest.raises(SystemExit, match=r"^pig_value_choices: error: the run's position table"):
        pig_value_choices.main([str(run), "--simulations", "4"])


def test_the_pig_value_benchmarks_refuse_a_missing_checkpoint_in_one_line(tmp_path):

    from benchmarks import pig_value_capacity, pig_value_choices

    for benchmark in (pig_value_choices, pig_value_capacity):
        name = benchmark.__name__.split(".")[-1]
        with pytest.raises(SystemExit, match=rf"^{name}: error: checkpoint .* does not exist"):
            benchmark.main([str(tmp_path / "nothing")])


def test_the_tree_reuse_benchmark_refuses_budgets_below_one_in_one_line(capsys):

    from benchmarks import countdown_tree_reuse

    with pytest.raises(SystemExit):
        countdown_tree_reuse.main(["--budgets", "8,0"])
    assert "expected comma-separated integers >= 1" in capsys.readouterr().err


@pytest.mark.skipif(
    not (Path(__file__).resolve().parent.parent / ".git").exists(), reason="needs the git history"
)
def test_the_search_ab_benchmark_times_this_tree_against_a_revision(tmp_path, capsys):
    from benchmarks import search_ab

    search_ab.main(
        ["--base", "HEAD", "--points", "2x4", "--budget", "0", "--export-root", str(tmp_path)]
    )
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[:4] == ["gumbel", "2", "4", "yes"] and float(row[6]) > 0
    exported = next(tmp_path.glob(f"*/{search_ab.BASE_PACKAGE}"))
    for source in exported.glob("*.py"):  # every import of the package reaches the copy
        code = source.read_text()
        assert not re.search(r"^\s*(from search[. ]|import search\b(?!_))", code, re.MULTILINE)
    with pytest.raises(SystemExit, match="--base 'no-such-revision' is not a commit"):
        search_ab.main(["--base", "no-such-revision", "--export-root", str(tmp_path)])
