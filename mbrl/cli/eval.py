"""``mbrl-eval``: a checkpoint against opponents, both seats; a W/D/L table and a JSON file.

    mbrl-eval checkpoint=runs/tic_tac_toe_alphazero_seed0 opponents=[random,minimax]
    mbrl-eval checkpoint=run/checkpoints/last.ckpt opponents=[mcts:100,mcts:1000] games=60
    mbrl-eval checkpoint=new.ckpt 'opponents=[checkpoint:old.ckpt]'

Opponents: random, lookahead (win now, else block), minimax (exact; small games), mcts:<N>
(OpenSpiel's MCTS with random rollouts), checkpoint:<path>.
"""

from __future__ import annotations

from mbrl.cli._command import console_main
from mbrl.evaluate import EvalCommandConfig, evaluate

main = console_main("mbrl-eval", EvalCommandConfig, "eval_command", evaluate)

if __name__ == "__main__":
    main()
