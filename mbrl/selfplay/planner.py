"""Self-play's choices around the search: the move it plays from a search's output, and the
per-game keys of its noise and random openings (the search itself, PUCT or Gumbel, is
`search.run`)."""

from __future__ import annotations

import numpy as np

import search
from search import SearchSettings

_GOLDEN = 0x9E3779B97F4A7C15


def played_actions(
    output: search.SearchOutput, settings: SearchSettings, explore: np.ndarray
) -> np.ndarray:
    """``[B]`` the moves self-play plays: Gumbel's sequential-halving choice; PUCT's action
    sampled from the visit counts (with per-root noise) where ``explore`` (a game's first
    ``temperature_moves``), the most visited action elsewhere."""
    if settings.policy == "gumbel":
        return output.action.astype(np.int64)
    greedy = np.argmax(output.visit_counts, axis=1)
    return np.where(explore, output.action, greedy).astype(np.int64)


_OPENING_STREAM = 0x6F70  # separates the openings' random stream from the search's keys


def opening_rng(seed: int, game_id: int) -> np.random.Generator:
    """The random stream of one game's random opening (``random_opening_moves``), keyed by
    (run seed, game number) like ``root_keys``: it does not depend on the game's slot."""
    return np.random.default_rng([seed, game_id, _OPENING_STREAM])


def root_keys(seed: int, game_ids: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """Per-root search keys from (run seed, game number, move number): a game's noise does not
    depend on which slot of the batch it occupies."""
    # Arrays (not numpy scalars) so the wrapping multiplications raise no overflow warning.
    base = np.full(len(game_ids), seed & 0xFFFFFFFFFFFFFFFF, np.uint64) * np.uint64(_GOLDEN)
    keys = base ^ (np.asarray(game_ids, np.uint64) * np.uint64(0xBF58476D1CE4E5B9))
    return keys ^ (np.asarray(moves, np.uint64) * np.uint64(0x94D049BB133111EB))
