"""How good is a learned model of a small board game? For a checkpoint of a learned-model agent
(MuZero, Gumbel MuZero, EfficientZero) on a game small enough to solve (tic-tac-toe):

- games lost to exact minimax (200 games, both seats) by the raw policy and by the search in the
  learned model at several simulation counts: the search should lose fewer, not more;
- over every reachable non-terminal position: the value head's mean absolute error against the
  minimax value, and the error of one-step Q values ``r + discount * v(g(s, a))`` against the
  minimax value of each legal move (immediate wins apart).

    python -m benchmarks.learned_model_accuracy runs/bench_tictactoe/seed0 --simulations 0,32,200
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from games.minimax import MinimaxSolver
from games.opponents import make_opponent
from mbrl.evaluation import play_match
from mbrl.loading import load_agent


def value_errors(loaded) -> dict[str, float]:
    """Mean absolute errors of the value head and of one-step Q values over all positions."""
    game, model = loaded.game, loaded.agent(1).model
    solver = MinimaxSolver(game.game)
    states = solver.nonterminal_states()
    obs = np.stack([game.observation(s) for s in states])
    legal = np.stack([game.legal_mask(s) for s in states])
    true_value = np.array([solver.value(s) for s in states])
    _, predicted_value = model.evaluate(obs)
    root = model.root(obs)
    q_errors, win_errors = [], []
    with torch.inference_mode():
        for action in range(legal.shape[1]):
            rows = np.flatnonzero(legal[:, action])
            if not len(rows):
                continue
            step, _ = model.recurrent_fn(root.embedding[rows], torch.full((len(rows),), action))
            predicted_q = step.reward + step.discount * step.value
            for row, q in zip(rows, predicted_q, strict=True):
                state = states[row]
                child = state.child(action)
                if child.is_terminal():
                    win_errors.append(abs(q - child.returns()[state.current_player()]))
                else:
                    q_errors.append(abs(q + solver.value(child)))
    return {
        "positions": len(states),
        "value_abs_error": float(np.abs(predicted_value - true_value).mean()),
        "q_abs_error": float(np.mean(q_errors)),
        "terminal_q_abs_error": float(np.mean(win_errors)) if win_errors else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoint", help="a run directory or .ckpt of a learned-model agent")
    parser.add_argument("--simulations", default="0,32", help="0 = the raw policy")
    parser.add_argument("--games", type=int, default=200)
    args = parser.parse_args()
    loaded = load_agent(args.checkpoint)
    if loaded.game is None or not loaded.latent:
        raise SystemExit(f"{args.checkpoint} is not a learned-model agent of a board game")
    minimax = make_opponent("minimax", loaded.game.game)
    print(f"{'simulations':>11} {'W':>4} {'D':>4} {'L':>4} {'L first':>8} {'L second':>9}")
    for count in (int(n) for n in args.simulations.split(",")):
        result = play_match(loaded.game, loaded.agent(count), minimax, args.games, seed=0)
        r = result.as_dict()
        print(
            f"{count:>11} {r['wins']:>4} {r['draws']:>4} {r['losses']:>4} "
            f"{r['losses_first']:>8} {r['losses_second']:>9}"
        )
    errors = value_errors(loaded)
    print(
        f"\nover {errors['positions']} positions: value |error| {errors['value_abs_error']:.3f}, "
        f"one-step Q |error| {errors['q_abs_error']:.3f} "
        f"(moves that end the game: {errors['terminal_q_abs_error']:.3f})"
    )


if __name__ == "__main__":
    main()
