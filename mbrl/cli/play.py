"""``mbrl-play``: play against a checkpoint in the terminal.

mbrl-play checkpoint=runs/tic_tac_toe_alphazero_seed0
mbrl-play checkpoint=runs/connect_four_alphazero_seed0 seat=second simulations=200
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from mbrl.cli._command import check_overrides, run_command, to_object
from mbrl.play import PlayConfig

APP = "mbrl-play"
ConfigStore.instance().store(name="play_command_schema", node=PlayConfig)


@hydra.main(version_base="1.3", config_path="pkg://configs", config_name="play_command")
def _hydra_main(cfg: DictConfig) -> None:
    from mbrl.play import play

    run_command(APP, lambda: play(to_object(cfg, PlayConfig)))


def main() -> None:
    run_command(APP, lambda: check_overrides(sys.argv[1:], PlayConfig))
    _hydra_main()


if __name__ == "__main__":
    main()
