"""``mbrl-play``: play against a checkpoint in the terminal.

mbrl-play checkpoint=runs/tic_tac_toe_alphazero_seed0
mbrl-play checkpoint=runs/connect_four_alphazero_seed0 seat=second simulations=200
"""

from __future__ import annotations

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from mbrl.play import PlayConfig

ConfigStore.instance().store(name="play_command_schema", node=PlayConfig)


@hydra.main(version_base="1.3", config_path="pkg://configs", config_name="play_command")
def main(cfg: DictConfig) -> None:
    from mbrl.play import play

    play(OmegaConf.to_object(cfg))


if __name__ == "__main__":
    main()
