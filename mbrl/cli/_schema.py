"""Registers ``mbrl-train``'s structured-config schema with Hydra: the core's ``TrainConfig``
with the groups of the packages built on it (the command-line layer is the one place that sees
every package; importing ``llm_bridge`` also registers its algorithms with the core)."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from llm_bridge.config import TextTrainConfig
from mbrl.cli._command import to_object

# Every group of every package: what mbrl-train composes and hands to the algorithm's train().
TrainCommandConfig = TextTrainConfig

CONFIG_PATH = "pkg://configs"


def register() -> None:
    schema = OmegaConf.structured(TrainCommandConfig)
    # game.params is the game's own parameter dict (OpenSpiel's, a task's): any key may be set,
    # as game.params.board_size=5 or game.params={board_size:5}, whatever the preset declares.
    OmegaConf.set_struct(schema.game.params, False)
    ConfigStore.instance().store(name="train_schema", node=schema)


def to_train_config(cfg: DictConfig) -> TrainCommandConfig:
    """The composed config as a ``TrainCommandConfig``; keys it does not declare are refused."""
    return to_object(cfg, TrainCommandConfig)
