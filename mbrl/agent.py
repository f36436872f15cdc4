"""A trained network as a player: a deterministic search (or the raw policy) in its model.

One class whatever the model: the true game (`GameModel`, AlphaZero), a learned latent model
(`LatentModel`, MuZero and EfficientZero). ``choose(states, rng) -> [B] actions`` plays board
games, the same shape as the fixed opponents in ``games.opponents``, so matches, ``mbrl-eval``
and ``mbrl-play`` treat both alike; ``act(timestep)`` plays any protocol environment (CartPole,
Atari).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import search
from games import BoardGame
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
    """Plays the most visited move of a noise-free search (Gumbel: its deterministic choice);
    ``num_simulations=0`` plays the network's raw policy argmax over legal moves.

    ``model`` is the search's model: ``search_root(states, obs)``, ``recurrent_fn``,
    ``evaluate(obs)`` and ``value_prefix_horizon``. ``game`` (board games) turns states into
    observations and legal masks for ``choose``."""

    def __init__(
        self,
        model,
        settings: SearchSettings,
        *,
        game: BoardGame | None = None,
        num_simulations: int | None = None,
        name: str = "agent",
    ):
        self.model, self.game, self.name = model, game, name
        self.settings, self.num_simulations = with_simulations(settings, num_simulations)

    def choose(self, states: list, rng: np.random.Generator | None = None) -> np.ndarray:
        del rng  # deterministic
        obs = np.stack([self.game.observation(s) for s in states])
        legal = np.stack([self.game.legal_mask(s) for s in states])
        return self._act(states, obs, legal)

    def act(self, timestep, states: list | None = None) -> np.ndarray:
        """Moves for a batch of observations; ``states`` (the games' own) for a model that
        searches the true game."""
        return self._act(states, timestep.obs, timestep.legal)

    def _act(self, states: list | None, obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        if self.num_simulations == 0:
            logits, _ = self.model.evaluate(obs)
            return np.argmax(np.where(legal, logits, -np.inf), axis=1).astype(np.int64)
        output = search.run(
            self.model.search_root(states, obs),
            self.model.recurrent_fn,
            self.settings,
            legal_mask=legal,
            deterministic=True,
            value_prefix_horizon=self.model.value_prefix_horizon,
        )
        return output.action.astype(np.int64)
