"""Board symmetries for data augmentation (AlphaZero's 8-fold Go augmentation, generalised).

A symmetry here is a transform of the board that maps the game's start position to itself, so
it maps the whole game tree onto itself: a position seen in self-play, rotated or mirrored, is a
position of the same game with the same value, whose policy is the rotated policy. Training on a
random transform of each sample shows the network every orientation of what self-play found.

Each game lists its transforms by name (only those that fix its start position: Othello's start
is not fixed by a quarter turn, Connect Four's gravity by none but the mirror). Observations are
``[..., C, H, W]`` boards; actions are either the board's cells (``r * W + c``, with an optional
pass last) or its columns (Connect Four).

    symmetries = board_symmetries(game)           # None when the game declares none
    batch = symmetries.augment(batch, rng)        # every sample its own random transform
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_TRANSFORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda grid: grid,
    "rot90": lambda grid: np.rot90(grid, 1),
    "rot180": lambda grid: np.rot90(grid, 2),
    "rot270": lambda grid: np.rot90(grid, 3),
    "flip_lr": np.fliplr,
    "flip_ud": np.flipud,
    "transpose": lambda grid: grid.T,
    "anti_transpose": lambda grid: np.rot90(grid, 2).T,
}
_D4 = tuple(_TRANSFORMS)

# The transforms that fix each game's start position (see the module docstring).
GAME_SYMMETRIES: dict[str, tuple[str, ...]] = {
    "tic_tac_toe": _D4,
    "go": _D4,
    "othello": ("identity", "rot180", "transpose", "anti_transpose"),
    "connect_four": ("identity", "flip_lr"),
    # Not hex: its rules are symmetric under a half turn, but its observation planes say which
    # edge a stone is connected to, and a half turn swaps those planes as well as the cells.
}


class BoardSymmetries:
    """Gather maps for a group of board transforms: ``cells [G, H*W]`` and ``actions [G, A]``,
    where transformed ``x[..., i] = x_original[..., map[g, i]]``; ``action_images [G, A]`` maps
    an original action to its transformed index."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, names: tuple[str, ...]):
        if len(obs_shape) < 2:
            raise ValueError(f"board symmetries need [..., H, W] observations, got {obs_shape}")
        unknown = sorted(set(names) - set(_TRANSFORMS))
        if unknown:
            raise ValueError(f"unknown board transforms {unknown}; known: {sorted(_TRANSFORMS)}")
        height, width = obs_shape[-2:]
        grid = np.arange(height * width).reshape(height, width)
        self.names = tuple(names)
        moved = [_TRANSFORMS[name](grid) for name in names]
        if any(m.shape != grid.shape for m in moved):
            raise ValueError(f"transforms {names} change the shape of a {height}x{width} board")
        self.cells = np.stack([m.ravel() for m in moved])
        if num_actions == width:  # one action per column: each transform must keep columns
            columns = np.tile(np.arange(width), (height, 1))
            moved = [_TRANSFORMS[name](columns) for name in names]
            if any(m.shape != columns.shape or (m != m[:1]).any() for m in moved):
                raise ValueError(f"transforms {names} do not map columns to columns")
            self.actions = np.stack([m[0] for m in moved])
        elif num_actions in (height * width, height * width + 1):  # cells, maybe a pass
            passes = np.arange(height * width, num_actions)  # the pass maps to itself
            self.actions = np.stack([np.concatenate([c, passes]) for c in self.cells])
        else:
            raise ValueError(
                f"{num_actions} actions are neither the {height}x{width} board's cells "
                f"(+ a pass) nor its {width} columns"
            )
        self.action_images = np.argsort(self.actions, axis=1)

    def __len__(self) -> int:
        return len(self.names)

    def augment(self, batch: dict[str, np.ndarray], rng: np.random.Generator) -> dict:
        """A copy of ``batch`` with every sample under its own random transform. Keys:
        ``obs [S, C, H, W]``, ``future_obs [S, K, C, H, W]``, ``legal [S, A]``, ``policy
        [S, A]`` or ``[S, K+1, A]``, ``actions [S, K]`` (original indices); other keys (values,
        rewards, masks, weights) are invariant and kept as they are."""
        count = len(batch["obs"])
        chosen = rng.integers(0, len(self), size=count)
        out = dict(batch)
        for key in ("obs", "future_obs"):
            if key in batch:
                out[key] = _gather_cells(batch[key], self.cells[chosen])
        for key in ("legal", "policy"):
            if key in batch:
                out[key] = _gather_last(batch[key], self.actions[chosen])
        if "actions" in batch:
            out["actions"] = np.take_along_axis(self.action_images[chosen], batch["actions"], 1)
        return out


def _gather_last(values: np.ndarray, maps: np.ndarray) -> np.ndarray:
    """``values [S, ..., A]`` gathered along the last axis by per-sample ``maps [S, A]``."""
    shape = (len(maps),) + (1,) * (values.ndim - 2) + (maps.shape[1],)
    return np.take_along_axis(values, maps.reshape(shape), axis=-1)


def _gather_cells(boards: np.ndarray, maps: np.ndarray) -> np.ndarray:
    """``boards [S, ..., H, W]`` with their cells gathered by per-sample ``maps [S, H*W]``."""
    flat = boards.reshape(*boards.shape[:-2], -1)
    return _gather_last(flat, maps).reshape(boards.shape)


def board_symmetries(name: str, obs_shape, num_actions: int) -> BoardSymmetries | None:
    """The symmetries game ``name`` declares, or None."""
    names = GAME_SYMMETRIES.get(name)
    return None if names is None else BoardSymmetries(tuple(obs_shape), num_actions, names)
