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
    (normal approximation of the mean game score, ``z`` = 1.96 for 95%)."""
    games = wins + draws + losses
    if games == 0:
        raise ValueError("no games to rate")
    score = (wins + 0.5 * draws) / games
    variance = (wins * (1 - score) ** 2 + draws * (0.5 - score) ** 2 + losses * score**2) / games
    half = z * math.sqrt(variance / games)
    return (
        elo_difference(score, games),
        elo_difference(score - half, games),
        elo_difference(score + half, games),
    )
