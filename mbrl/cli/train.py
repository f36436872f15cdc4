"""``mbrl-train``: train an agent from a Hydra config.

    mbrl-train experiment=tictactoe
    mbrl-train game=connect_four algo=gumbel_alphazero search.num_simulations=16
    mbrl-train experiment=countdown_distill   # an LM distils search on Countdown-24
    mbrl-train --cfg job          # print the composed config and exit
    mbrl-train --help             # the config groups and their options

Re-running the same command continues from the run directory's last checkpoint.
"""

from __future__ import annotations

import json
import signal
import sys

import hydra
from omegaconf import DictConfig

from mbrl import registry
from mbrl.cli._command import (
    check_composition,
    check_overrides,
    config_groups,
    run_command,
)
from mbrl.cli._schema import CONFIG_PATH, TrainCommandConfig, register, to_train_config
from mbrl.validation import validate

APP = "mbrl-train"
register()


def _train(cfg: DictConfig) -> None:
    # The algorithm's package registered its train function (mbrl.registry); it is imported
    # only now, after composition, so --help and --cfg stay fast.
    config = to_train_config(cfg)
    validate(config)  # an unknown algorithm or a mismatched game kind, before importing
    summary = registry.train_function(config.algo.name)(config)
    from mbrl.selfplay.data_parallel import is_follower  # after training, like the trainer

    if is_follower(config.trainer):  # a further device's copy of the command: rank 0 reports
        return
    print(json.dumps(summary, indent=1, default=str))
    if summary.get("interrupted"):  # SIGTERM or Ctrl-C: last.ckpt is written; say so, fail
        print(
            f"{APP}: stopped by {summary['interrupted']}; {summary['run_dir']} holds the "
            "checkpoint: re-run the same command to resume",
            file=sys.stderr,
        )
        sys.exit(128 + signal.Signals[summary["interrupted"]].value)


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="train")
def _hydra_main(cfg: DictConfig) -> None:
    run_command(APP, lambda: _train(cfg))


def main() -> None:
    run_command(APP, lambda: check_overrides(sys.argv[1:], TrainCommandConfig, config_groups()))
    run_command(APP, lambda: check_composition("train", sys.argv[1:]))
    _hydra_main()


if __name__ == "__main__":
    main()
