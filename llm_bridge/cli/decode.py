"""``mbrl-decode``: search-augmented (or plain) decoding of a task with a trained LM.

mbrl-decode checkpoint=runs/countdown_pretrain_seed0 method=mcts budget=32
mbrl-decode checkpoint=RUN method=best_of_n budget=16 split=train limit=100
mbrl-decode checkpoint=RUN method=gumbel budget=32 prompts=my_prompts.txt
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from llm_bridge.decode_command import DecodeCommandConfig
from mbrl.cli._command import check_overrides, run_command, to_object

APP = "mbrl-decode"
ConfigStore.instance().store(name="decode_command_schema", node=DecodeCommandConfig)


@hydra.main(version_base="1.3", config_path="pkg://configs", config_name="decode_command")
def _hydra_main(cfg: DictConfig) -> None:
    from llm_bridge.decode_command import run_decode

    run_command(APP, lambda: run_decode(to_object(cfg, DecodeCommandConfig)))


def main() -> None:
    run_command(APP, lambda: check_overrides(sys.argv[1:], DecodeCommandConfig))
    _hydra_main()


if __name__ == "__main__":
    main()
