"""How often the raw policy's first choice is a minimax-optimal move, over every reachable
non-terminal position of a game small enough to solve (tic-tac-toe: 4,520 positions)."""

from __future__ import annotations

import numpy as np

from games import BoardGame
from games.minimax import MinimaxSolver
from mbrl.selfplay.game_model import GameModel


class PolicyOptimality:
    """Solves the game once; ``__call__(model)`` scores a network in one batched pass."""

    def __init__(self, game: BoardGame, solver: MinimaxSolver | None = None):
        self.game = game
        solver = solver or MinimaxSolver(game.game)
        states = solver.nonterminal_states()
        self.obs = np.stack([game.observation(s) for s in states])
        self.legal = np.stack([game.legal_mask(s) for s in states])
        self.optimal = np.zeros_like(self.legal)
        for row, state in enumerate(states):
            self.optimal[row, solver.optimal_actions(state)] = True

    def __len__(self) -> int:
        return len(self.obs)

    def __call__(self, model: GameModel) -> float:
        logits, _ = model.evaluate(self.obs)
        choice = np.argmax(np.where(self.legal, logits, -np.inf), axis=1)
        return float(self.optimal[np.arange(len(choice)), choice].mean())
