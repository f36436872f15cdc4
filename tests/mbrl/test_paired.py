"""Paired differences over seeds and their t intervals."""

import math

import pytest

from mbrl.evaluation.paired import paired_difference, t_quantile_975


def test_the_interval_is_the_textbook_paired_t_interval():
    a, b = [0.30, 0.28, 0.31, 0.27, 0.29], [0.27, 0.27, 0.28, 0.26, 0.25]
    mean, low, high = paired_difference(a, b)
    d = [0.03, 0.01, 0.03, 0.01, 0.04]
    sd = math.sqrt(sum((x - 0.024) ** 2 for x in d) / 4)
    assert mean == pytest.approx(0.024)
    assert high - mean == pytest.approx(2.776 * sd / math.sqrt(5))
    assert low > 0  # ahead on every seed by a steady margin: the interval excludes zero


def test_a_difference_inside_the_seed_noise_has_an_interval_across_zero():
    _, low, high = paired_difference([0.3, 0.2, 0.35, 0.25], [0.28, 0.24, 0.30, 0.27])
    assert low < 0 < high


def test_quantiles_and_refusals():
    assert t_quantile_975(1) == 12.706 and t_quantile_975(30) == 2.042
    assert abs(t_quantile_975(60) - 2.000) < 0.003 and abs(t_quantile_975(120) - 1.980) < 0.003
    assert paired_difference([1.0], [0.5])[1] == -math.inf
    with pytest.raises(ValueError, match="paired"):
        paired_difference([1.0, 2.0], [1.0])
