"""How often an agent's roll-or-stop choice in Pig is optimal, against the exact solution.

`PigOptimality` solves the configured Pig (or Piglet) once (`games.pig_optimal`), lists the
decision states reachable from the start where both moves are legal, and scores an agent by the
share of them where it plays an optimal move, next to the shares of "always roll" and "always
stop", the trivial policies a measurement must beat to mean anything. Large games are measured on a fixed random
sample of their states.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from games.chance import ChanceGame
from games.pig_optimal import (
    ROLL,
    STOP,
    match_win_probability,
    optimal_share,
    reachable_decision_states,
    solve_pig,
    state_key,
)


class PigOptimality:
    """``measure(agent) -> {"optimal_share": ...}`` for an agent with ``act(timestep)``."""

    def __init__(self, params: dict[str, Any], *, max_states: int = 2000, seed: int = 0):
        rules = {
            "winscore": int(params.get("winscore", 100)),
            "dice_outcomes": int(params.get("diceoutcomes", 6)),
            "piglet": bool(params.get("piglet", False)),
        }
        self.solution = solve_pig(**rules)
        states = reachable_decision_states(**rules)
        if len(states) > max_states:
            keep = np.random.default_rng(seed).choice(len(states), max_states, replace=False)
            states = [states[i] for i in sorted(keep)]
        self.states = states
        game = ChanceGame("pig", params)
        self.obs = np.stack([game.observation(state) for state in states])
        self.legal = np.stack([game.legal_mask(state) for state in states])
        # The trivial policies' shares: what a measurement must beat to mean anything.
        self.always_roll_share = optimal_share(lambda state: ROLL, self.solution, states)
        self.always_stop_share = optimal_share(lambda state: STOP, self.solution, states)

    def shares(self, actions: np.ndarray) -> float:
        """The share of the states (in ``self.states``' order) where ``actions`` is optimal."""
        right = [
            int(action) in self.solution.optimal_actions(*state_key(state))
            for state, action in zip(self.states, actions, strict=True)
        ]
        return float(np.mean(right))

    def win_probability_against_optimal(self, actions: np.ndarray) -> float:
        """The exact probability that ``actions`` (one per state of ``self.states``) beat the
        optimal player, the two seats averaged (0.5: as good as optimal). Where both players'
        states share a (scores, turn total) the first player's move is taken; positions the
        agent was not asked about play optimally."""
        rolls = self.solution.rolls().copy()
        for state, action in sorted(
            zip(self.states, actions, strict=True), key=lambda pair: -pair[0].current_player()
        ):
            rolls[state_key(state)] = int(action) == ROLL
        if not rolls[:, :, 0].all():  # stopping with nothing could stall the game for ever
            rolls[:, :, 0] = True
        odds = match_win_probability(self.solution.rules, rolls, self.solution.rolls())
        return (odds.moving_first + odds.moving_second) / 2

    def measure(self, agent) -> dict[str, float]:
        actions = agent.act(SimpleNamespace(obs=self.obs, legal=self.legal), self.states)
        return {
            "optimal_share": self.shares(actions),
            "win_vs_optimal": self.win_probability_against_optimal(actions),
            "always_roll_share": self.always_roll_share,
            "always_stop_share": self.always_stop_share,
        }
