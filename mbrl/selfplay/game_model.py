"""The true game as the search's model: AlphaZero's ``recurrent_fn``.

Embeddings are raw OpenSpiel states (one Python object per node); a simulation clones the parent
state, plays the action, and asks the network for the new node's prior and value in one batched
call. Rewards and discounts follow the search's contract: the reward is the mover's, discount
``-1`` when the turn passes to the opponent, ``0`` into a terminal state.
"""

from __future__ import annotations

import time

import numpy as np
import torch

import search
from games import BoardGame


class GameModel:
    """``BoardGame`` rules + a policy-value network, batched for the search."""

    value_prefix_horizon = None  # the true game's rewards are per step

    def __init__(self, game: BoardGame, network: torch.nn.Module):
        self.game = game
        self.network = network
        self.network_calls = 0  # batched forward passes
        self.positions = 0  # positions evaluated by the network
        self.network_seconds = 0.0  # wall time in network calls (incl. transfers to numpy)

    @property
    def device(self) -> torch.device:
        """Where the weights live now (the loop moves the actor's network to the trainer's)."""
        return next(self.network.parameters()).device

    @torch.inference_mode()
    def evaluate(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``obs [B, *obs_shape] -> (logits [B, A] float32, value [B] float32)``."""
        start = time.perf_counter()
        self.network_calls += 1
        self.positions += len(obs)
        output = self.network(torch.from_numpy(obs).to(self.device))
        result = output.logits.float().cpu().numpy(), output.value.float().cpu().numpy()
        self.network_seconds += time.perf_counter() - start
        return result

    def search_root(self, states: list, obs: np.ndarray) -> search.RootOutput:
        """The roots of a search from ``states`` whose observations are ``obs``."""
        logits, value = self.evaluate(obs)
        return search.RootOutput(prior_logits=logits, value=value, embedding=list(states))

    def recurrent_fn(self, states: list, actions: np.ndarray):
        batch = len(states)
        num_actions = self.game.num_actions
        reward = np.zeros(batch, np.float32)
        discount = np.zeros(batch, np.float32)
        legal = np.ones((batch, num_actions), np.bool_)  # terminal nodes: any action (absorbing)
        children = list(states)
        live = []  # rows whose new node needs the network
        for b, (state, action) in enumerate(zip(states, actions.tolist(), strict=True)):
            if state.is_terminal():  # a terminal node chosen again: it stays absorbed
                continue
            transition = self.game.apply(state, action)
            children[b] = transition.state
            reward[b] = transition.reward
            if not transition.terminal:
                discount[b] = -1.0 if transition.turn_changed else 1.0
                legal[b] = self.game.legal_mask(transition.state)
                live.append(b)
        logits = np.zeros((batch, num_actions), np.float32)
        value = np.zeros(batch, np.float32)
        if live:
            obs = np.stack([self.game.observation(children[b]) for b in live])
            logits[live], value[live] = self.evaluate(obs)
        step = search.StepOutput(reward, discount, logits, value, legal)
        return step, children
