"""Loading never runs code: crafted checkpoints are refused by every path that loads one."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llm_bridge.decode_command import DecodeCommandConfig, run_decode
from llm_bridge.lm_checkpoint import KIND, load_lm
from mbrl.checkpoint import UnsafeCheckpointError, load_checkpoint, load_safely
from mbrl.evaluate import EvalCommandConfig, evaluate
from mbrl.train import train


class _RunsACommand:
    """Unpickling this runs a shell command, as a crafted checkpoint would."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def craft(path: Path, marker: Path, **plain) -> Path:
    """A checkpoint that looks right at the top level and carries the payload inside."""
    torch.save({**plain, "payload": _RunsACommand(marker)}, path)
    return path


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "code_ran"
    yield path
    assert not path.exists(), "loading a checkpoint ran the crafted command"


def test_load_safely_refuses_a_crafted_file_naming_the_object(tmp_path, marker):
    evil = craft(tmp_path / "evil.pt", marker)
    with pytest.raises(UnsafeCheckpointError, match=r"evil\.pt holds a Python object \(posix"):
        load_safely(evil)


def test_no_refusal_advises_turning_the_protection_off(tmp_path, marker):
    evil = craft(tmp_path / "evil.pt", marker)
    with pytest.raises(ValueError) as refused:
        load_safely(evil)
    assert "weights_only" not in str(refused.value)


def test_game_checkpoints_are_refused_by_eval_and_loading(tmp_path, marker):
    evil = craft(tmp_path / "evil.ckpt", marker, mbrl={"game": {}}, state_dict={})
    with pytest.raises(UnsafeCheckpointError):
        load_checkpoint(evil)
    with pytest.raises(UnsafeCheckpointError):
        evaluate(EvalCommandConfig(checkpoint=str(evil), opponents=["random"]))


def test_lm_checkpoints_are_refused_by_decode_and_init_from(tmp_path, marker, tiny_config):
    evil = craft(tmp_path / "evil.pt", marker, kind=KIND, settings={}, alphabet="ab", task={})
    with pytest.raises(UnsafeCheckpointError):
        load_lm(evil)
    with pytest.raises(UnsafeCheckpointError):
        run_decode(DecodeCommandConfig(checkpoint=str(evil)))
    from llm_bridge.train_text import train_text

    cfg = tiny_config(
        "game=countdown24",
        "algo=lm_distill",
        f"run_dir={tmp_path / 'run'}",
        f"llm.init_from={evil}",
    )
    with pytest.raises(UnsafeCheckpointError):
        train_text(cfg)


def test_a_crafted_last_ckpt_in_a_run_dir_is_not_resumed_from(tiny_config, tmp_path, marker):
    run_dir = tmp_path / "run"
    cfg = tiny_config(f"run_dir={run_dir}", "trainer.max_steps=4", "trainer.checkpoint_every=0")
    train(cfg)
    last = run_dir / "checkpoints" / "last.ckpt"
    craft(last, marker, mbrl={}, state_dict={})
    summary = train(tiny_config(f"run_dir={run_dir}", "trainer.max_steps=6"))
    assert summary["resumed_from"] is None and summary["steps"] == 6


def test_mbrl_decode_refuses_a_crafted_file_in_one_line(tmp_path, marker):
    evil = craft(tmp_path / "evil.pt", marker, kind=KIND)
    result = subprocess.run(
        [sys.executable, "-m", "llm_bridge.cli.decode", f"checkpoint={evil}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused" in lines[0] and "Traceback" not in result.stderr
    assert "weights_only" not in result.stderr + result.stdout


def test_bytes_flipped_inside_a_tensor_are_refused_by_the_zip_checksums(tmp_path):
    from mbrl.checkpoint import CorruptCheckpointError

    path = tmp_path / "last.ckpt"
    torch.save({"weight": torch.full((1000,), 7.0)}, path)
    assert torch.equal(load_safely(path)["weight"], torch.full((1000,), 7.0))
    data = bytearray(path.read_bytes())
    middle = data.index(torch.full((8,), 7.0).numpy().tobytes()) + 2000
    data[middle] ^= 0xFF  # torch.load alone would return a 7.0 changed into another number
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptCheckpointError, match=r"last\.ckpt is corrupt: its entry data/0"):
        load_safely(path)
