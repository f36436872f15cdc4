"""Registers the structured-config schema of ``mbrl/config.py`` with Hydra."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from mbrl.cli._command import to_object
from mbrl.config import TrainConfig

CONFIG_PATH = "pkg://configs"


def register() -> None:
    schema = OmegaConf.structured(TrainConfig)
    # game.params is the game's own parameter dict (OpenSpiel's, a task's): any key may be set,
    # as game.params.board_size=5 or game.params={board_size:5}, whatever the preset declares.
    OmegaConf.set_struct(schema.game.params, False)
    ConfigStore.instance().store(name="train_schema", node=schema)


def to_train_config(cfg: DictConfig) -> TrainConfig:
    """The composed config as a ``TrainConfig``; keys it does not declare are refused."""
    return to_object(cfg, TrainConfig)
