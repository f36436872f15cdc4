"""Registers the structured-config schema of ``mbrl/config.py`` with Hydra."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from mbrl.config import TrainConfig

CONFIG_PATH = "pkg://configs"


def register() -> None:
    ConfigStore.instance().store(name="train_schema", node=TrainConfig)


def to_train_config(cfg: DictConfig) -> TrainConfig:
    return OmegaConf.to_object(cfg)
