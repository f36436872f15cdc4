"""Elo ratings from match scores, anchored on earlier checkpoints."""

from __future__ import annotations

import math


def elo_difference(score: float, games: int) -> float:
    """Rating difference implied by a score in [0, 1]; clipped half a game from 0 and 1 so a
    clean sweep gives a finite number."""
    margin = 0.5 / max(1, games)
    score = min(max(score, margin), 1 - margin)
    return 400.0 * math.log10(score / (1 - score))


def rate_against_pool(results: list[tuple[float, float, int]]) -> float:
    """Rating of a player from ``(opponent_rating, score, games)`` for each opponent: the
    games-weighted mean of the per-opponent estimates."""
    total = sum(games for _, _, games in results)
    if total == 0:
        raise ValueError("no games to rate")
    return (
        sum((rating + elo_difference(score, games)) * games for rating, score, games in results)
        / total
    )
