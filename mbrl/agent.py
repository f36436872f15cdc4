"""A trained network as a player: deterministic search (or the raw policy) over batched states.

It has the same ``choose(states, rng) -> [B] actions`` shape as the fixed opponents in
``games.opponents``, so matches, ``mbrl-eval`` and ``mbrl-play`` treat both alike.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

import search
from games import BoardGame
from mbrl.selfplay.game_model import GameModel
from mbrl.selfplay.latent_model import LatentModel
from mbrl.selfplay.planner import plan
from search import SearchSettings


def with_simulations(
    settings: SearchSettings, num_simulations: int | None
) -> tuple[SearchSettings, int]:
    """The search settings at ``num_simulations`` (None = as trained; 0 = raw policy)."""
    count = settings.num_simulations if num_simulations is None else num_simulations
    if count < 0:
        raise ValueError(f"num_simulations must be >= 0, got {count}")
    if count:
        settings = dataclasses.replace(settings, num_simulations=count)
    return settings, count


class SearchAgent:
    """Plays the most visited move of a noise-free search; ``num_simulations=0`` plays the
    network's raw policy argmax over legal moves."""

    def __init__(
        self,
        game: BoardGame,
        network: torch.nn.Module,
        settings: SearchSettings,
        *,
        num_simulations: int | None = None,
        name: str = "agent",
    ):
        self.game = game
        self.model = GameModel(game, network.eval())
        self.settings, self.num_simulations = with_simulations(settings, num_simulations)
        self.name = name

    def choose(self, states: list, rng: np.random.Generator | None = None) -> np.ndarray:
        del rng  # deterministic
        if self.num_simulations == 0:
            obs = np.stack([self.game.observation(s) for s in states])
            legal = np.stack([self.game.legal_mask(s) for s in states])
            logits, _ = self.model.evaluate(obs)
            return np.argmax(np.where(legal, logits, -np.inf), axis=1).astype(np.int64)
        output = plan(self.model, states, self.settings, deterministic=True)
        return output.action.astype(np.int64)


class LatentSearchAgent:
    """A learned-model agent: deterministic search in its own latent model from observations.

    ``choose(states)`` plays board games (OpenSpiel states, like ``SearchAgent``);
    ``act(timestep)`` plays any protocol environment (CartPole, Atari)."""

    def __init__(
        self,
        network: torch.nn.Module,
        settings: SearchSettings,
        *,
        discount: float,
        two_player: bool,
        value_prefix_horizon: int = 0,
        game: BoardGame | None = None,
        num_simulations: int | None = None,
        name: str = "agent",
    ):
        self.game = game
        self.model = LatentModel(
            network.eval(),
            discount=discount,
            two_player=two_player,
            value_prefix_horizon=value_prefix_horizon,
        )
        self.horizon = value_prefix_horizon or None
        self.settings, self.num_simulations = with_simulations(settings, num_simulations)
        self.name = name

    def act_on(self, obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        if self.num_simulations == 0:
            logits, _ = self.model.evaluate(obs)
            return np.argmax(np.where(legal, logits, -np.inf), axis=1).astype(np.int64)
        root = self.model.root(obs)
        output = search.run(
            root,
            self.model.recurrent_fn,
            self.settings,
            legal_mask=legal,
            deterministic=True,
            value_prefix_horizon=self.horizon,
        )
        return output.action.astype(np.int64)

    def act(self, timestep) -> np.ndarray:
        return self.act_on(timestep.obs, timestep.legal)

    def choose(self, states: list, rng: np.random.Generator | None = None) -> np.ndarray:
        del rng  # deterministic
        obs = np.stack([self.game.observation(s) for s in states])
        legal = np.stack([self.game.legal_mask(s) for s in states])
        return self.act_on(obs, legal)
