"""Shared by the learning benchmarks: compose a training config as ``mbrl-train`` would, run it,
and read back its evaluation history (``eval.jsonl``)."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_module

from mbrl.cli._schema import register, to_train_config
from mbrl.config import TrainConfig
from mbrl.jsonl_log import read_records


def compose_train(*overrides: str) -> TrainConfig:
    register()
    with initialize_config_module(config_module="configs", version_base="1.3"):
        return to_train_config(compose(config_name="train", overrides=list(overrides)))


def eval_history(run_dir: str | Path) -> list[dict]:
    return read_records(Path(run_dir) / "eval.jsonl")
