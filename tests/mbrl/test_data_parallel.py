"""The learner on two CPU processes (trainer.devices=2, DDP over gloo): it takes the gradient
steps of the one-device run, resumes, and stops on a signal with both ranks together."""

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from mbrl.checkpoint import load_checkpoint
from mbrl.selfplay.data_parallel import slices
from mbrl.validation import validate

DATA = "SelfPlayDataModule"
# MuZero on CartPole: an MLP with layer norm (batch norm's statistics would differ per slice on
# CPUs) and prioritized replay, so the priorities come back from both ranks.
COMMAND = (
    "debug=tiny",
    "game=cartpole",
    "algo=muzero",
    "replay.prioritized=true",
    "eval.games=1",
    "trainer.torch_threads=1",
)


def train_command(run_dir, *overrides) -> list[str]:
    return [sys.executable, "-m", "mbrl.cli.train", *COMMAND, f"run_dir={run_dir}", *overrides]


def run(run_dir, *overrides) -> subprocess.CompletedProcess:
    result = subprocess.run(
        train_command(run_dir, *overrides),
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,  # a hung rank would not outlive the test's timeout
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_two_devices_take_the_one_device_runs_steps_and_resume(tmp_path):
    run(tmp_path / "one", "trainer.max_steps=20")
    run(tmp_path / "two", "trainer.devices=2", "trainer.max_steps=10")
    resumed = run(tmp_path / "two", "trainer.devices=2", "trainer.max_steps=20")
    assert '"resumed_from"' in resumed.stdout and "last.ckpt" in resumed.stdout
    assert resumed.stdout.count('"run_dir"') == 1  # rank 1 reports nothing
    one, two = load_checkpoint(tmp_path / "one"), load_checkpoint(tmp_path / "two")
    assert two["global_step"] == 20 and two[DATA]["gradient_steps"] == 20
    for key, value in one["state_dict"].items():  # the same steps, up to float summation order
        torch.testing.assert_close(two["state_dict"][key], value, rtol=0, atol=1e-5, msg=key)
    replay_one, replay_two = one[DATA]["replay"], two[DATA]["replay"]
    assert replay_one["total_added"] == replay_two["total_added"]
    torch.testing.assert_close(  # both ranks' priorities reached rank 0's replay
        replay_two["arrays"]["priorities"], replay_one["arrays"]["priorities"], rtol=1e-4, atol=1e-6
    )


def test_a_signal_to_rank_0_stops_both_ranks_after_the_same_step(tmp_path):
    process = subprocess.Popen(
        train_command(tmp_path, "trainer.devices=2", "trainer.max_steps=100000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    step = tmp_path / "checkpoints" / "step000010.ckpt"
    try:
        deadline = time.monotonic() + 120
        while not step.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert step.exists(), process.stderr.read()[-3000:] if process.poll() else "no step 10"
        process.send_signal(signal.SIGTERM)  # rank 0 only, as a scheduler's pre-emption
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    last = load_checkpoint(tmp_path)
    assert last[DATA]["gradient_steps"] == last["global_step"] >= 10
    assert last[DATA]["replay"] is not None


def test_each_rank_gets_an_equal_slice_in_rank_order():
    batch = {"obs": torch.arange(12).reshape(6, 2), "indices": torch.arange(6)}
    parts = slices(batch, 3)
    assert [p["indices"].tolist() for p in parts] == [[0, 1], [2, 3], [4, 5]]
    assert torch.equal(torch.cat([p["obs"] for p in parts]), batch["obs"])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("trainer.devices=3",), r"trainer.batch_size=16 must be a multiple of trainer.devices=3"),
        (("trainer.strategy=fsdp",), r"trainer.strategy must be one of auto \| ddp"),
        (("trainer.devices=0",), r"trainer.devices must be >= 1, got 0"),
    ],
)
def test_devices_that_cannot_slice_the_batch_are_refused(tiny_config, overrides, message):
    with pytest.raises(ValueError, match=message):
        validate(tiny_config(*overrides))
