"""Evaluation: matches against fixed opponents and checkpoints, Elo, policy optimality."""

from mbrl.evaluation.elo import elo_difference, rate_against_pool
from mbrl.evaluation.match import MatchResult, play_match
from mbrl.evaluation.optimality import PolicyOptimality

__all__ = ["MatchResult", "PolicyOptimality", "elo_difference", "play_match", "rate_against_pool"]
