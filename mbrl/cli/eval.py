"""``mbrl-eval``: a checkpoint against opponents, both seats; a W/D/L table and a JSON file.

    mbrl-eval checkpoint=runs/tic_tac_toe_alphazero_seed0 opponents=[random,minimax]
    mbrl-eval checkpoint=run/checkpoints/last.ckpt opponents=[mcts:100,mcts:1000] games=60
    mbrl-eval checkpoint=new.ckpt 'opponents=[checkpoint:old.ckpt]'

Opponents: random, lookahead (win now, else block), minimax (exact; small games), mcts:<N>
(OpenSpiel's MCTS with random rollouts), checkpoint:<path>.
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from mbrl.cli._command import check_overrides, run_command, to_object
from mbrl.evaluate import EvalCommandConfig

APP = "mbrl-eval"
ConfigStore.instance().store(name="eval_command_schema", node=EvalCommandConfig)


@hydra.main(version_base="1.3", config_path="pkg://configs", config_name="eval_command")
def _hydra_main(cfg: DictConfig) -> None:
    from mbrl.evaluate import evaluate

    run_command(APP, lambda: evaluate(to_object(cfg, EvalCommandConfig)))


def main() -> None:
    run_command(APP, lambda: check_overrides(sys.argv[1:], EvalCommandConfig))
    _hydra_main()


if __name__ == "__main__":
    main()
