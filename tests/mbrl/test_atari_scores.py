"""Human-normalized Atari scores and their bootstrap aggregates."""

import io

import ale_py
import numpy as np
import pytest
from rich.console import Console

from mbrl.evaluation.atari_scores import (
    ATARI_100K_GAMES,
    REFERENCE_SCORES,
    aggregate,
    human_normalized,
    normalize_scores,
    score_table,
)


def test_atari_100k_games_are_the_26_ale_rom_ids():
    assert len(ATARI_100K_GAMES) == 26
    assert set(ATARI_100K_GAMES) <= set(ale_py.roms.get_all_rom_ids())


def test_reference_scores_spot_checks():
    assert REFERENCE_SCORES["pong"] == (-20.7, 14.6)
    assert REFERENCE_SCORES["breakout"] == (1.7, 30.5)
    assert REFERENCE_SCORES["ms_pacman"] == (307.3, 6951.6)
    assert REFERENCE_SCORES["private_eye"] == (24.9, 69571.3)


@pytest.mark.parametrize("game", ATARI_100K_GAMES)
def test_random_is_zero_and_human_is_one(game):
    random, human = REFERENCE_SCORES[game]
    assert human > random
    assert human_normalized(game, random) == pytest.approx(0.0, abs=1e-12)
    assert human_normalized(game, human) == pytest.approx(1.0)


def test_game_names_forgive_case_and_underscores():
    assert human_normalized("MsPacman", 307.3) == human_normalized("ms_pacman", 307.3)
    assert human_normalized("KungFuMaster", 22736.3) == pytest.approx(1.0)


def test_unknown_game_error_names_it_and_lists_known_games():
    with pytest.raises(ValueError, match="space_invaders") as error:
        human_normalized("space_invaders", 100.0)
    assert "pong" in str(error.value) and "up_n_down" in str(error.value)


def test_aggregates_of_one_run_per_game_match_hand_computation():
    scores = dict(zip("abcdefgh", [0.0, 1.0, 2.0, 3.0, 7.0, 9.0, 10.0, 100.0], strict=True))
    result = aggregate(scores, reps=50)
    # IQM of 8 scores: drop the 2 lowest and 2 highest, mean of [2, 3, 7, 9].
    assert result["iqm"].point == pytest.approx(21 / 4)
    assert result["mean"].point == pytest.approx(132 / 8)
    assert result["median"].point == pytest.approx((3 + 7) / 2)
    # One run per game: nothing to resample, so every interval is its point.
    for interval in result.values():
        assert interval.low == interval.point == interval.high


def test_mean_and_median_are_over_game_means_iqm_pools_runs():
    scores = {"a": [0.0, 1.0, 2.0, 3.0], "b": [7.0, 9.0, 10.0, 100.0], "c": [4.0, 4.0, 4.0, 4.0]}
    result = aggregate(scores, reps=50)
    assert result["mean"].point == pytest.approx((1.5 + 31.5 + 4.0) / 3)
    assert result["median"].point == pytest.approx(4.0)
    # 12 pooled scores, drop 3 from each end: [3, 4, 4, 4, 4, 7].
    assert result["iqm"].point == pytest.approx(26 / 6)


def test_iqm_matches_scipy_trim_mean():
    stats = pytest.importorskip("scipy.stats")
    runs = np.random.default_rng(1).lognormal(size=(5, 26))
    scores = {f"g{i}": runs[:, i] for i in range(26)}
    expected = stats.trim_mean(runs, 0.25, axis=None)
    assert aggregate(scores, reps=10)["iqm"].point == pytest.approx(expected)


def test_bootstrap_interval_contains_point_and_is_deterministic():
    runs = np.random.default_rng(0).normal(1.0, 0.5, size=(5, 26))
    scores = {game: runs[:, i] for i, game in enumerate(ATARI_100K_GAMES)}
    first = aggregate(scores, reps=500, seed=3)
    assert aggregate(scores, reps=500, seed=3) == first
    assert aggregate(dict(reversed(scores.items())), reps=500, seed=3) == first
    assert aggregate(scores, reps=500, seed=4) != first
    for interval in first.values():
        assert interval.low < interval.point < interval.high


def test_aggregate_rejects_empty_or_non_finite_scores():
    with pytest.raises(ValueError, match="empty"):
        aggregate({})
    with pytest.raises(ValueError, match="'pong'"):
        aggregate({"pong": []})
    with pytest.raises(ValueError, match="'pong'"):
        aggregate({"pong": [1.0, float("nan")]})
    with pytest.raises(ValueError, match="reps"):
        aggregate({"pong": 1.0}, reps=0)


def test_normalize_scores_accepts_numbers_and_run_lists():
    normalized = normalize_scores({"pong": 14.6, "breakout": [1.7, 30.5]})
    np.testing.assert_allclose(normalized["pong"], [1.0])
    np.testing.assert_allclose(normalized["breakout"], [0.0, 1.0], atol=1e-12)


def test_score_table_has_a_row_per_game_and_the_aggregates():
    table = score_table({"pong": [14.6, -20.7], "breakout": 30.5}, reps=20)
    assert table.row_count == 2 + 3
    console = Console(file=io.StringIO(), width=160)
    console.print(table)
    text = console.file.getvalue()
    for word in ("pong", "breakout", "mean", "median", "IQM", "0.500"):
        assert word in text
