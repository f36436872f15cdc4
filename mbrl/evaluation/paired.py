"""Paired comparisons over seeds: the mean difference and its Student-t interval.

Two methods run on the same seeds share each seed's luck (its data order, its start), so their
per-seed differences vary far less than either method does; the interval of the mean difference
is what says whether one is ahead."""

from __future__ import annotations

import math
from collections.abc import Sequence

# Two-sided 95% quantiles of Student's t by degrees of freedom (standard tables).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile_975(degrees_of_freedom: int) -> float:
    if degrees_of_freedom < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {degrees_of_freedom}")
    if degrees_of_freedom <= len(_T975):
        return _T975[degrees_of_freedom - 1]
    return 1.96 + 2.4 / degrees_of_freedom  # within 0.002 of the exact quantile beyond 30


def paired_difference(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``a - b`` over paired runs, with its 95% t interval (the
    interval is infinite for a single pair)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"need equally many paired runs, got {len(a)} and {len(b)}")
    differences = [x - y for x, y in zip(a, b, strict=True)]
    n = len(differences)
    mean = sum(differences) / n
    if n == 1:
        return mean, -math.inf, math.inf
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half
