"""How often an agent's roll-or-stop choice in Pig is optimal, against the exact solution.

`PigOptimality` solves the configured Pig (or Piglet) once (`games.pig_optimal`), lists the
decision states reachable from the start where both moves are legal, and scores an agent by the
share of them where it plays an optimal move, next to the shares of "always roll" and "always
stop", the trivial policies a measurement must beat to mean anything. Large games are measured on a fixed random
sample of their states. Where the agent's model has a value head (``model.evaluate``), its mean
absolute error against the exact value ``2 P(win) - 1`` says how precise the values are that the
choices rest on.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from games.chance import ChanceGame
from games.pig_optimal import (
    ROLL,
    STOP,
    expected_visits,
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
        self.exact_value = self.exact_values(states)

    def exact_values(self, states) -> np.ndarray:
        """``[len(states)]`` the mover's exact value in [-1, 1] (win +1, loss -1, no discount)
        of each decision state."""
        win = self.solution.win_probability
        return np.array([2.0 * win[state_key(state)] - 1.0 for state in states])

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
        odds = match_win_probability(
            self.solution.rules, self.agent_rolls(actions), self.solution.rolls()
        )
        return (odds.moving_first + odds.moving_second) / 2

    def agent_rolls(self, actions: np.ndarray) -> np.ndarray:
        """``[W, W, K]`` bool: where ``actions`` roll. Where both players' states share a
        (scores, turn total) the first player's move is taken; elsewhere the optimal move."""
        rolls = self.solution.rolls().copy()
        for state, action in sorted(
            zip(self.states, actions, strict=True), key=lambda pair: -pair[0].current_player()
        ):
            rolls[state_key(state)] = int(action) == ROLL
        if not rolls[:, :, 0].all():  # stopping with nothing could stall the game for ever
            rolls[:, :, 0] = True
        return rolls

    def share_on_path(self, actions: np.ndarray) -> float:
        """The optimal share weighted by how often the agent meets each state when it plays the
        optimal player (seats averaged): the choices that decide its games. The plain share
        counts every reachable state alike, most of them ones that good play never meets."""
        rolls = self.agent_rolls(actions)
        visits = expected_visits(self.solution.rules, rolls, self.solution.rolls())
        keys = sorted({state_key(state) for state in self.states})
        weights = np.array([visits[key] for key in keys])
        right = np.array(
            [(ROLL if rolls[key] else STOP) in self.solution.optimal_actions(*key) for key in keys]
        )
        return float(weights @ right / weights.sum())

    def measure(self, agent) -> dict[str, float]:
        actions = agent.act(SimpleNamespace(obs=self.obs, legal=self.legal), self.states)
        scores = {
            "optimal_share": self.shares(actions),
            "win_vs_optimal": self.win_probability_against_optimal(actions),
            "optimal_share_on_path": self.share_on_path(actions),
            "always_roll_share": self.always_roll_share,
            "always_stop_share": self.always_stop_share,
        }
        model = getattr(agent, "model", None)
        if hasattr(model, "evaluate"):
            with torch.inference_mode():
                _, value = model.evaluate(self.obs)
            scores["value_abs_error"] = float(np.abs(value - self.exact_value).mean())
        return scores
