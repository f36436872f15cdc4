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


def elo_interval(wins: int, draws: int, losses: int, z: float = 1.96) -> tuple[float, float, float]:
    """``(elo, low, high)``: the rating difference a match's score implies and its interval
    from the Wilson interval of the score (draws as half points; ``z`` = 1.96 for 95%), which
    stays honest at 0 and 1, where a normal approximation collapses to a point."""
    games = wins + draws + losses
    if games == 0:
        raise ValueError("no games to rate")
    score = (wins + 0.5 * draws) / games
    centre = (score + z * z / (2 * games)) / (1 + z * z / games)
    half = (z / (1 + z * z / games)) * math.sqrt(
        score * (1 - score) / games + z * z / (4 * games * games)
    )
    return (
        elo_difference(score, games),
        elo_difference(centre - half, games),
        elo_difference(centre + half, games),
    )
