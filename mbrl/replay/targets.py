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


def alphazero_positions(trajectory: Trajectory) -> dict[str, np.ndarray]:
    """``Trajectory -> {obs, legal, policy, value}``, value = outcome for the player to move."""
    return {
        "obs": trajectory.obs,
        "legal": trajectory.legal,
        "policy": trajectory.policy,
        "value": trajectory.returns[trajectory.to_play].astype(np.float32),
    }
