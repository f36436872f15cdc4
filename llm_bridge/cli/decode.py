"""``mbrl-decode``: search-augmented (or plain) decoding of a task with a trained LM.

mbrl-decode checkpoint=runs/countdown_pretrain_seed0 method=mcts budget=32
mbrl-decode checkpoint=RUN method=best_of_n budget=16 split=train limit=100
mbrl-decode checkpoint=RUN method=gumbel budget=32 prompts=my_prompts.txt
"""

from __future__ import annotations

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from llm_bridge.decode_command import DecodeCommandConfig

ConfigStore.instance().store(name="decode_command_schema", node=DecodeCommandConfig)


@hydra.main(version_base="1.3", config_path="pkg://configs", config_name="decode_command")
def main(cfg: DictConfig) -> None:
    from llm_bridge.decode_command import run_decode

    run_decode(OmegaConf.to_object(cfg))


if __name__ == "__main__":
    main()
