"""mbrl-eval and mbrl-play on a tiny checkpoint, and their errors for bad input."""

import json
import subprocess
import sys

import pytest

from mbrl.evaluate import EvalCommandConfig, evaluate
from mbrl.play import PlayConfig, play
from mbrl.train import train


def test_eval_plays_both_seats_and_writes_json(trained_run, tmp_path):
    run_dir, _ = trained_run
    output = tmp_path / "results.json"
    cfg = EvalCommandConfig(
        checkpoint=str(run_dir),
        opponents=[
            "random",
            "lookahead",
            "minimax",
            "mcts:20",
            f"checkpoint:{run_dir}/checkpoints/step000010.ckpt",
        ],
        games=6,
        simulations=4,
        output=str(output),
    )
    report = evaluate(cfg)
    assert json.loads(output.read_text()) == report
    for result in report["results"].values():
        assert result["games"] == 6 == result["wins"] + result["draws"] + result["losses"]
    assert report["results"]["minimax"]["wins"] == 0


def test_eval_refuses_a_checkpoint_of_another_game(tiny_config, trained_run, tmp_path):
    run_dir, _ = trained_run
    other = tmp_path / "c4"
    train(
        tiny_config(
            f"run_dir={other}",
            "game=connect_four",
            "trainer.max_steps=2",
            "trainer.checkpoint_every=2",
        )
    )
    cfg = EvalCommandConfig(checkpoint=str(run_dir), opponents=[f"checkpoint:{other}"], games=2)
    with pytest.raises(ValueError, match=r"trained for game connect_four.*not for tic_tac_toe"):
        evaluate(cfg)


def test_eval_errors_name_the_bad_input(trained_run, tmp_path):
    run_dir, _ = trained_run
    with pytest.raises(ValueError, match="unknown opponent spec 'alphago'"):
        evaluate(EvalCommandConfig(checkpoint=str(run_dir), opponents=["alphago"]))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        evaluate(EvalCommandConfig(checkpoint=str(tmp_path / "missing.ckpt")))
    with pytest.raises(FileNotFoundError, match="no checkpoint in run directory"):
        evaluate(EvalCommandConfig(checkpoint=str(tmp_path)))
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"junk\.ckpt is not a readable checkpoint"):
        evaluate(EvalCommandConfig(checkpoint=str(junk)))


def scripted(lines):
    lines = iter(lines)

    def ask(prompt):
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    return ask


def test_play_reasks_bad_moves_and_finishes_a_game(trained_run):
    run_dir, _ = trained_run
    said = []
    moves = ["hello", "99", "", *[str(a) for a in range(9)] * 2]
    # Every legal cell in order (ids repeated: the ones already taken are re-asked).
    outcomes = play(
        PlayConfig(checkpoint=str(run_dir), simulations=4), scripted(moves), said.append
    )
    assert len(outcomes) == 1 and outcomes[0] in (-1, 0, 1)
    assert any("'hello' is not a legal move" in line for line in said)
    assert any("'99' is not a legal move" in line for line in said)


def test_play_accepts_openspiel_move_names_and_quits_cleanly(trained_run):
    run_dir, _ = trained_run
    said = []
    outcomes = play(
        PlayConfig(checkpoint=str(run_dir), seat="second", simulations=2),
        scripted(["quit"]),
        said.append,
    )
    assert outcomes == [] and said[-1] == "bye"
    outcomes = play(PlayConfig(checkpoint=str(run_dir)), scripted(["x(1,1)"]), said.append)
    assert outcomes == [] and any("agent plays" in line for line in said)


def test_play_refuses_a_bad_seat_and_a_missing_checkpoint(trained_run, tmp_path):
    run_dir, _ = trained_run
    with pytest.raises(ValueError, match="seat must be one of"):
        play(PlayConfig(checkpoint=str(run_dir), seat="middle"))
    with pytest.raises(FileNotFoundError):
        play(PlayConfig(checkpoint=str(tmp_path / "nope.ckpt")))


def test_commands_explain_themselves():
    for module in ("train", "eval", "play"):
        result = subprocess.run(
            [sys.executable, "-m", f"mbrl.cli.{module}", "--help"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert f"mbrl-{module}:" in result.stdout and "checkpoint" in result.stdout
