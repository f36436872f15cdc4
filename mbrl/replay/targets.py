"""Training targets from finished games.

AlphaZero (K = 0): every position of a finished game is one training example: the search's
policy (visit distribution, or Gumbel's improved policy) and the game's outcome for the player
who was to move. A game cut off by the move limit counts as a draw. MuZero's K-step unroll
targets (n-step values, rewards) will be built from the same ``Trajectory`` records.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Trajectory(NamedTuple):
    """One finished game, ``T`` positions long."""

    obs: np.ndarray  # [T, *obs_shape] float32, from the player to move
    legal: np.ndarray  # [T, A] bool
    policy: np.ndarray  # [T, A] float32, the search's policy target
    root_value: np.ndarray  # [T] float32, the search's value of each position
    move_value: np.ndarray  # [T] float32, the search's Q of the move played (see the actor)
    to_play: np.ndarray  # [T] int64
    actions: np.ndarray  # [T] int64, the moves played
    returns: np.ndarray  # [2] float32, final utility per player (zeros if truncated)
    truncated: bool


def alphazero_fields(obs_shape: tuple[int, ...], num_actions: int) -> dict:
    """The replay fields AlphaZero trains on: name -> (per-position shape, dtype)."""
    return {
        "obs": (tuple(obs_shape), np.float32),
        "legal": ((num_actions,), np.bool_),
        "policy": ((num_actions,), np.float32),
        "value": ((), np.float32),
    }


def alphazero_positions(
    trajectory: Trajectory, search_value_weight: float = 0.0
) -> dict[str, np.ndarray]:
    """``Trajectory -> {obs, legal, policy, value}``. The value is the outcome for the player
    to move, mixed with weight ``search_value_weight`` with the search's value of the move that
    was played (also for the player to move): one game's outcome is a noisy sample, the search
    value a biased but steadier estimate of the same game's continuation."""
    outcome = trajectory.returns[trajectory.to_play]
    value = (1.0 - search_value_weight) * outcome + search_value_weight * trajectory.move_value
    return {
        "obs": trajectory.obs,
        "legal": trajectory.legal,
        "policy": trajectory.policy,
        "value": value.astype(np.float32),
    }
