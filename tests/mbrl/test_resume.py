"""Resume never loses work: changed settings, signals, corrupt files, overwrite, failed starts."""

import os
import signal
import subprocess
import sys
import time

import pytest

from mbrl.checkpoint import load_checkpoint
from mbrl.graceful_stop import EvaluationAborted, GracefulStop
from mbrl.jsonl_log import read_records
from mbrl.run_dir import EXPERIMENT_FILE
from mbrl.train import train

DATA = "SelfPlayDataModule"


def test_changing_checkpoint_every_on_resume_keeps_writing_last_ckpt(tiny_config, tmp_path):
    train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=10", "trainer.checkpoint_every=5"))
    # Every key a resume may change, changed at once (checkpoint_every made Lightning version
    # the name: last-v1.ckpt without the replay buffer, and later re-runs lost its steps).
    changed = (
        "trainer.checkpoint_every=4",
        "trainer.log_every=3",
        "trainer.progress_bar=true",
        "eval.every=6",
        "eval.games=2",
        "logger.tensorboard=false",
    )
    train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=16", *changed))
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert not [n for n in names if n.startswith("last") and n != "last.ckpt"], names
    last = load_checkpoint(tmp_path)
    assert last["global_step"] == 16 and last[DATA]["replay"] is not None
    summary = train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=18", *changed))
    assert summary["resumed_from"].endswith("last.ckpt") and summary["steps"] == 18


def _start(tmp_path, *overrides):
    command = [
        sys.executable,
        "-m",
        "mbrl.cli.train",
        "debug=tiny",
        f"run_dir={tmp_path}",
        "trainer.max_steps=100000",
        "trainer.checkpoint_every=5",
        *overrides,
    ]
    return subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def _wait_for(path, process, seconds=120):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_killed_run_resumes_when_the_same_command_is_rerun(tmp_path):
    process = _start(tmp_path)
    try:
        # last.ckpt is written just after each step checkpoint, so once step 15's exists the
        # resumable last.ckpt holds step 10 or later.
        _wait_for(tmp_path / "checkpoints" / "step000015.ckpt", process)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert load_checkpoint(tmp_path)["global_step"] >= 10
    result = subprocess.run(
        [*process.args[:-2], "trainer.max_steps=30", "trainer.checkpoint_every=5"],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert '"resumed_from"' in result.stdout and "last.ckpt" in result.stdout
    resumed = load_checkpoint(tmp_path)
    assert resumed["global_step"] == 30 and resumed[DATA]["gradient_steps"] == 30


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_writes_last_ckpt_before_exiting(tmp_path, number):
    process = _start(tmp_path)
    try:
        _wait_for(tmp_path / "checkpoints" / "step000010.ckpt", process)
        process.send_signal(number)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 128 + number, stderr[-3000:]
    assert "Traceback" not in stderr
    assert f"stopped by {signal.Signals(number).name}" in stderr
    last = load_checkpoint(tmp_path)
    steps = sorted((tmp_path / "checkpoints").glob("step*.ckpt"))
    assert last["global_step"] >= int(steps[-1].stem[4:])  # at least the last step file
    assert last[DATA]["replay"] is not None and last[DATA]["gradient_steps"] == last["global_step"]


def test_a_stop_signal_abandons_an_evaluation_in_progress():
    class Trainer:
        should_stop = False
        world_size = 1

    stop, trainer = GracefulStop(), Trainer()
    before = signal.getsignal(signal.SIGTERM)
    stop.on_train_start(trainer, None)
    try:
        with pytest.raises(EvaluationAborted), stop.abortable():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends
    finally:
        stop.on_train_end(trainer, None)
    assert trainer.should_stop and stop.signal_name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is before  # given back


def test_a_corrupt_last_ckpt_resumes_from_the_newest_step_checkpoint(tiny_config, tmp_path, capsys):
    cfg = tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=10", "trainer.checkpoint_every=5")
    train(cfg)
    checkpoints = tmp_path / "checkpoints"
    last = checkpoints / "last.ckpt"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])  # truncated mid-write
    leftover = checkpoints / ".last.tmp.k1ll3d.ckpt"  # a killed atomic write
    leftover.write_bytes(b"partial")
    capsys.readouterr()
    summary = train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=14"))
    said = capsys.readouterr().err
    assert summary["resumed_from"].endswith("step000010.ckpt") and summary["steps"] == 14
    assert f"{last} is not a readable checkpoint (truncated or corrupt" in said
    assert "resuming from" in said and "step000010.ckpt" in said
    assert not leftover.exists() and f"removed {leftover}" in said
    resumed = load_checkpoint(tmp_path)
    assert resumed["global_step"] == 14 and resumed[DATA]["replay"]["total_added"] > 0


def test_a_resume_from_an_older_checkpoint_does_not_record_an_evaluation_twice(
    tiny_config, tmp_path
):
    """Killed after the evaluation of step 9 was written but before a checkpoint held it, a run
    resumes from step 8 and evaluates step 9 again: eval.jsonl keeps that step once."""
    steps = ("trainer.max_steps=10", "trainer.checkpoint_every=4", "eval.every=3", "eval.games=2")
    train(tiny_config(f"run_dir={tmp_path}", *steps))
    log = tmp_path / "eval.jsonl"
    assert [record["step"] for record in read_records(log)] == [3, 6, 9, 10]
    for name in ("last.ckpt", "step000010.ckpt"):  # as if killed at step 10, before its write
        (tmp_path / "checkpoints" / name).unlink(missing_ok=True)
    summary = train(tiny_config(f"run_dir={tmp_path}", *steps))
    assert summary["resumed_from"].endswith("step000008.ckpt")
    assert [record["step"] for record in read_records(log)] == [3, 6, 9, 10]


def test_forgetting_later_evaluations_keeps_lines_that_are_no_evaluation(tmp_path):
    """eval.jsonl edited by hand: a line that is not a record with a whole-number step stays."""
    from types import SimpleNamespace

    from mbrl.callbacks import PeriodicEvaluation

    log = tmp_path / "eval.jsonl"
    log.write_text('{"step": 3}\n[1, 2]\n{"note": "mine"}\n{"step": "9"}\n{"step": 9}\n')
    PeriodicEvaluation._forget_evaluations_after(SimpleNamespace(log_path=log), 8)
    assert read_records(log) == [{"step": 3}, [1, 2], {"note": "mine"}, {"step": "9"}]


def test_overwrite_leaves_a_directory_that_never_held_a_run_alone(tiny_config, tmp_path):
    important = tmp_path / "checkpoints" / "important_model.ckpt"
    important.parent.mkdir()
    important.write_bytes(b"the user's own model")
    train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=2", "overwrite=true"))
    assert important.read_bytes() == b"the user's own model"


def test_overwrite_deletes_only_what_the_run_wrote(tiny_config, tmp_path):
    train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=10", "trainer.checkpoint_every=5"))
    mine = [tmp_path / "notes.txt", tmp_path / "checkpoints" / "keep.ckpt", tmp_path / "tb" / "x"]
    for path in mine:
        path.write_text("the user's")
    summary = train(
        tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=2", "seed=1", "overwrite=true")
    )
    assert summary["resumed_from"] is None
    assert all(path.read_text() == "the user's" for path in mine)
    assert not (tmp_path / "checkpoints" / "step000010.ckpt").exists()


def test_a_start_that_fails_does_not_claim_the_run_dir(tiny_config, tmp_path):
    with pytest.raises(ValueError, match="unknown game 'tic_tac_tow'"):
        train(tiny_config(f"run_dir={tmp_path}", "game.name=tic_tac_tow"))
    with pytest.raises(ValueError, match="has chance nodes"):
        train(tiny_config(f"run_dir={tmp_path}", "game.name=kuhn_poker"))
    assert not (tmp_path / EXPERIMENT_FILE).exists()
    summary = train(tiny_config(f"run_dir={tmp_path}", "trainer.max_steps=2"))
    assert summary["steps"] == 2
