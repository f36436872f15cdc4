"""The record every game returns: one batched step of B games in lockstep."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class TimeStep(NamedTuple):
    """What the player to move sees after ``reset`` or ``step`` (leading axis: the B games).

    ``reward`` is the reward of the move just made, to the player who made it (0 after a reset);
    ``to_play`` is the player to move now (-1 where the game is over). ``legal`` is True for legal
    actions, the one mask convention of the whole framework.
    """

    obs: np.ndarray  # [B, *obs_shape] float32, from the perspective of the player to move
    legal: np.ndarray  # [B, A] bool
    to_play: np.ndarray  # [B] int64
    reward: np.ndarray  # [B] float32
    terminated: np.ndarray  # [B] bool
    truncated: np.ndarray  # [B] bool

    @property
    def done(self) -> np.ndarray:
        return self.terminated | self.truncated


def batch_actions(actions, batch_size: int) -> np.ndarray:
    """``actions`` as a flat ``[B]`` array; a wrong count is refused, naming both."""
    actions = np.asarray(actions).reshape(-1)
    if actions.shape[0] != batch_size:
        raise ValueError(f"step expects {batch_size} actions, got {actions.shape[0]}")
    return actions


def reset_indices(indices, batch_size: int) -> list[int]:
    """The slots a ``reset`` starts anew (all when ``None``); anything but integers in range
    is refused."""
    if indices is None:
        return list(range(batch_size))
    indices = np.asarray(indices).reshape(-1)
    if not np.issubdtype(indices.dtype, np.integer) or (
        len(indices) and (indices.min() < 0 or indices.max() >= batch_size)
    ):
        raise ValueError(
            f"reset indices must be integers in [0, {batch_size}), got {indices!r}"
            " (for a done mask use np.flatnonzero(mask))"
        )
    return indices.tolist()
