"""The true game with its true chance as the search's model: the reference Stochastic MuZero is
measured against (an AlphaZero that knows the dice).

A `search.ChanceModel` over raw OpenSpiel states of a `games.chance.ChanceGame`. A decision
leads to the afterstate the simulator gives; the afterstate's chance distribution is the game's
own, and its value is exact given the network: every outcome is played out (one batched network
call for all outcomes of all afterstates of the simulation) and
``Q(s, a) = r(s, a) + sum_c p(c) (r_c + d_c v(s_c))``. Those children are kept in the afterstate's
embedding, so a later simulation that picks outcome ``c`` costs no network call at all.

Rewards and discounts follow the search's contract: the decision edge has reward 0 and
discount 1 (its reward is counted on the chance edge, as the learned model predicts it: one
reward per move); the chance edge carries the move's reward to the mover, discount ``-1`` where
the turn passed (two players), ``gamma`` where it did not, ``0`` into the end. A decision that needs
no chance (Pig's stop, a game's last move) gets a single certain code 0.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np
import torch

import search
from games.chance import ChanceGame

IMPOSSIBLE = -1e9  # the logit of a chance code the game cannot produce here


class _Child(NamedTuple):
    """One chance outcome's state, played out and evaluated."""

    state: Any
    reward: float  # the whole move's reward to the mover (decision and chance)
    discount: float
    legal: np.ndarray  # [A]
    logits: np.ndarray  # [A], zeros at the end
    value: float  # the network's value to the player to move there, 0 at the end


class ChanceAfterstate(NamedTuple):
    """An afterstate node's embedding: the simulator's state and every outcome's child."""

    state: Any
    children: dict[int, _Child]  # code -> child


class ChanceGameModel:
    """``ChanceGame`` rules + a policy-value network (``predict(represent(obs))``: a
    `MuZeroNet`'s prediction of the observation, no dynamics), batched for the search."""

    value_prefix_horizon = None

    def __init__(self, game: ChanceGame, network: torch.nn.Module, *, discount: float = 1.0):
        from mbrl.networks.support import ScalarSupport

        self.game = game
        self.network = network
        self.discount = discount
        self.value_support = ScalarSupport(network.settings.support_size)
        self.network_calls = 0
        self.positions = 0  # positions evaluated by the network
        self.network_seconds = 0.0

    @property
    def device(self) -> torch.device:
        return next(self.network.parameters()).device

    @property
    def recurrent_fn(self) -> search.ChanceModel:
        return search.ChanceModel(self.decision_fn, self.chance_fn, self.game.num_chance_outcomes)

    @torch.inference_mode()
    def evaluate(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``obs [B, *obs_shape] -> (logits [B, A], value [B])``."""
        start = time.perf_counter()
        self.network_calls += 1
        self.positions += len(obs)
        tensor = torch.from_numpy(np.ascontiguousarray(obs)).to(self.device)
        logits, value_logits = self.network.predict(self.network.represent(tensor))
        value = self.value_support.to_scalar(value_logits).float().cpu().numpy()
        logits = logits.float().cpu().numpy()
        self.network_seconds += time.perf_counter() - start
        return logits, value

    def values(self, obs: np.ndarray) -> np.ndarray:
        return self.evaluate(obs)[1]

    def root(self, obs: np.ndarray) -> search.RootOutput:
        raise ValueError("the true-chance model searches from game states: use search_root")

    def search_root(self, states: list, obs: np.ndarray) -> search.RootOutput:
        if states is None:
            raise ValueError("the true-chance model needs the games' states, not only observations")
        logits, value = self.evaluate(obs)
        return search.RootOutput(prior_logits=logits, value=value, embedding=list(states))

    def observe(self, states: list) -> tuple[np.ndarray, np.ndarray]:
        """``(obs [B, *obs_shape], legal [B, A])`` of game states, to search from them."""
        obs = np.zeros((len(states), *self.game.obs_shape), np.float32)
        legal = np.zeros((len(states), self.game.num_actions), np.bool_)
        for row, state in enumerate(states):
            obs[row], legal[row] = self.game.observation(state), self.game.legal_mask(state)
        return obs, legal

    def node_positions(
        self, states: list, roots: np.ndarray, nodes: np.ndarray
    ) -> tuple[np.ndarray, list, np.ndarray]:
        """``(obs [M', *obs_shape], states [M'], kept [M'] indices into roots)``: the search's
        state nodes ``states[root][node]`` that the game has not ended (an end has no value to
        learn: it is 0), and their observations."""
        picked = [
            states[root][node] for root, node in zip(roots.tolist(), nodes.tolist(), strict=True)
        ]
        kept = np.flatnonzero([not state.is_terminal() for state in picked])
        live = [picked[i] for i in kept.tolist()]
        return self.observe(live)[0], live, kept

    def decision_fn(self, states: list, actions: np.ndarray):
        """Afterstates of ``states`` after ``actions``, every outcome played out and valued."""
        afterstates, pending = [], []  # pending: (row, code, state, reward) awaiting the network
        for row, (state, action) in enumerate(
            zip(states, np.asarray(actions).tolist(), strict=True)
        ):
            afterstates.append(self._afterstate(row, state, int(action), pending))
        self._evaluate_pending(afterstates, pending)
        num_codes = self.game.num_chance_outcomes
        chance_logits = np.full((len(states), num_codes), IMPOSSIBLE, np.float32)
        value = np.zeros(len(states), np.float32)
        for row, node in enumerate(afterstates):
            probabilities = self._outcome_probabilities(node)
            for code, child in node.children.items():
                chance_logits[row, code] = np.log(probabilities[code])
                value[row] += probabilities[code] * (child.reward + child.discount * child.value)
        return search.AfterstateOutput(value=value, chance_logits=chance_logits), afterstates

    def chance_fn(self, afterstates: list, codes: np.ndarray):
        rows = len(afterstates)
        num_actions = self.game.num_actions
        reward, discount = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
        logits = np.zeros((rows, num_actions), np.float32)
        value = np.zeros(rows, np.float32)
        legal = np.ones((rows, num_actions), np.bool_)
        states = []
        for row, (node, code) in enumerate(
            zip(afterstates, np.asarray(codes).tolist(), strict=True)
        ):
            child = node.children.get(int(code))
            if child is None:  # a code the game cannot produce here (its prior is ~0)
                child = next(iter(node.children.values()))
            states.append(child.state)
            reward[row], discount[row], value[row] = child.reward, child.discount, child.value
            logits[row], legal[row] = child.logits, child.legal
        return search.StepOutput(reward, discount, logits, value, legal), states

    # -- the simulator ----------------------------------------------------------------------

    def _afterstate(self, row: int, state, action: int, pending: list) -> ChanceAfterstate:
        if state.is_terminal():  # an absorbed end chosen again: nothing more happens
            return ChanceAfterstate(state, {0: _Child(state, 0.0, 0.0, *self._end())})
        game = self.game
        mover = state.current_player()
        after = game.apply_decision(state, action)
        decision_reward = after.reward
        outcomes = (
            [(code, game.apply_chance(after.state, code)) for code in self._codes(after.state)]
            if game.is_chance(after.state)
            else [(0, after.state)]
        )
        for code, child in outcomes:
            if game.is_chance(child):  # a second chance event in a row: resolve it by its code
                child, _ = game.resolve_chance(child, np.random.default_rng(code))
            reward = decision_reward + game.returns(child)[mover] - game.returns(after.state)[mover]
            pending.append((row, code, child, float(reward), mover))
        return ChanceAfterstate(after.state, {})

    def _codes(self, chance_state) -> list[int]:
        return [int(code) for code, p in chance_state.chance_outcomes() if p > 0]

    def _outcome_probabilities(self, node: ChanceAfterstate) -> dict[int, float]:
        if not self.game.is_chance(node.state):
            return {code: 1.0 for code in node.children}
        distribution = self.game.chance_distribution(node.state)
        return {code: float(distribution[code]) for code in node.children}

    def _end(self) -> tuple[np.ndarray, np.ndarray, float]:
        num_actions = self.game.num_actions
        return np.ones(num_actions, np.bool_), np.zeros(num_actions, np.float32), 0.0

    def _evaluate_pending(self, afterstates: list[ChanceAfterstate], pending: list) -> None:
        live = [item for item in pending if not item[2].is_terminal()]
        if live:
            obs = np.stack([self.game.observation(item[2]) for item in live])
            logits, values = self.evaluate(obs)
            evaluated = {id(item): (logits[i], values[i]) for i, item in enumerate(live)}
        for item in pending:
            row, code, child, reward, mover = item
            if child.is_terminal():
                afterstates[row].children[code] = _Child(child, reward, 0.0, *self._end())
                continue
            child_logits, child_value = evaluated[id(item)]
            turn_passed = child.current_player() != mover
            afterstates[row].children[code] = _Child(
                child,
                reward,
                -self.discount if turn_passed else self.discount,
                self.game.legal_mask(child),
                child_logits,
                float(child_value),
            )
