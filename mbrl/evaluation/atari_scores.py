"""Human-normalized Atari scores and their aggregates, as the Atari-100k papers report them.

Raw Atari scores differ by orders of magnitude between games, so results are reported as
human-normalized scores (HNS): 0 is uniformly random play, 1 is the human tester. The reference
table is the one of the DQN line of work (van Hasselt et al. 2016, Wang et al. 2016, Rainbow by
Hessel et al. 2018) that SimPLe, CURL, SPR and EfficientZero normalize with; only the 26 games of
the Atari-100k benchmark are listed. Aggregates follow Agarwal et al. (2021), "Deep RL at the edge
of the statistical precipice": mean, median and interquartile mean (IQM) with stratified bootstrap
confidence intervals, because a handful of runs makes a bare point estimate misleading.

EfficientZero's per-game 100k scores are not tabulated here: the preprint and the NeurIPS version
report different numbers and this module keeps only reference numbers it can stand behind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
from rich.table import Table


class ReferenceScore(NamedTuple):
    """Raw game score of uniformly random play and of the human tester."""

    random: float
    human: float


# Keyed by ale-py ROM id, the names ``games.atari.resolve_game`` returns.
REFERENCE_SCORES: dict[str, ReferenceScore] = {
    "alien": ReferenceScore(227.8, 7127.7),
    "amidar": ReferenceScore(5.8, 1719.5),
    "assault": ReferenceScore(222.4, 742.0),
    "asterix": ReferenceScore(210.0, 8503.3),
    "bank_heist": ReferenceScore(14.2, 753.1),
    "battle_zone": ReferenceScore(2360.0, 37187.5),
    "boxing": ReferenceScore(0.1, 12.1),
    "breakout": ReferenceScore(1.7, 30.5),
    "chopper_command": ReferenceScore(811.0, 7387.8),
    "crazy_climber": ReferenceScore(10780.5, 35829.4),
    "demon_attack": ReferenceScore(152.1, 1971.0),
    "freeway": ReferenceScore(0.0, 29.6),
    "frostbite": ReferenceScore(65.2, 4334.7),
    "gopher": ReferenceScore(257.6, 2412.5),
    "hero": ReferenceScore(1027.0, 30826.4),
    "jamesbond": ReferenceScore(29.0, 302.8),
    "kangaroo": ReferenceScore(52.0, 3035.0),
    "krull": ReferenceScore(1598.0, 2665.5),
    "kung_fu_master": ReferenceScore(258.5, 22736.3),
    "ms_pacman": ReferenceScore(307.3, 6951.6),
    "pong": ReferenceScore(-20.7, 14.6),
    "private_eye": ReferenceScore(24.9, 69571.3),
    "qbert": ReferenceScore(163.9, 13455.0),
    "road_runner": ReferenceScore(11.5, 7845.0),
    "seaquest": ReferenceScore(68.4, 42054.7),
    "up_n_down": ReferenceScore(533.4, 11693.2),
}

ATARI_100K_GAMES: tuple[str, ...] = tuple(sorted(REFERENCE_SCORES))


class Interval(NamedTuple):
    """A point estimate and its bootstrap confidence interval ``[low, high]``."""

    point: float
    low: float
    high: float


def reference_score(game: str) -> ReferenceScore:
    """The random and human scores of ``game`` (ROM id, e.g. ``"ms_pacman"``; case and
    underscores are forgiven, so ``"MsPacman"`` works too)."""
    if game in REFERENCE_SCORES:
        return REFERENCE_SCORES[game]
    key = str(game).replace("_", "").lower()
    for rom_id, reference in REFERENCE_SCORES.items():
        if rom_id.replace("_", "") == key:
            return reference
    raise ValueError(
        f"no random/human reference score for Atari game {game!r}; known games: "
        f"{', '.join(ATARI_100K_GAMES)}"
    )


def human_normalized(game: str, score: float) -> float:
    """``(score - random) / (human - random)``: 0 for random play, 1 for the human tester."""
    random, human = reference_score(game)
    return (float(score) - random) / (human - random)


def normalize_scores(raw: Mapping[str, float | Sequence[float]]) -> dict[str, np.ndarray]:
    """Raw scores per game (one per run, or a single number) -> HNS per game, ``[runs]``."""
    return {
        game: np.array([human_normalized(game, s) for s in np.atleast_1d(scores)])
        for game, scores in raw.items()
    }


def _runs_by_game(scores: Mapping[str, float | Sequence[float]]) -> list[np.ndarray]:
    """Validated ``[runs]`` float arrays, one per game, in sorted game order (so the bootstrap
    does not depend on the mapping's insertion order)."""
    if not scores:
        raise ValueError("no games to aggregate: got an empty mapping")
    runs = []
    for game in sorted(scores):
        values = np.atleast_1d(np.asarray(scores[game], np.float64))
        if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all():
            raise ValueError(
                f"scores of {game!r} must be a finite number or a non-empty 1-D list of finite "
                f"numbers, got {scores[game]!r}"
            )
        runs.append(values)
    return runs


def _statistics(runs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Mean, median and IQM of ``runs``, each game's array ``[reps, runs_g]`` -> ``[reps]``.

    Mean and median are over the games' mean scores; IQM pools every run of every game and
    averages the middle half, cutting ``floor(n / 4)`` scores from each end (Agarwal et al. 2021;
    the same as ``scipy.stats.trim_mean(x, 0.25)``).
    """
    game_means = np.stack([r.mean(axis=-1) for r in runs], axis=-1)  # [reps, games]
    pooled = np.sort(np.concatenate(runs, axis=-1), axis=-1)  # [reps, n]
    cut = pooled.shape[-1] // 4
    return {
        "mean": game_means.mean(axis=-1),
        "median": np.median(game_means, axis=-1),
        "iqm": pooled[:, cut : pooled.shape[-1] - cut].mean(axis=-1),
    }


def aggregate(
    normalized: Mapping[str, float | Sequence[float]],
    *,
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Interval]:
    """Mean, median and IQM of normalized scores (``game -> score`` or ``game -> [runs]``).

    Confidence intervals are percentile intervals of a stratified bootstrap: each of ``reps``
    resamples draws, within every game, as many runs as it has, with replacement. With one run
    per game there is nothing to resample and each interval is its point. Deterministic for a
    ``seed``. Returns ``{"mean", "median", "iqm"} -> Interval``.
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    runs = _runs_by_game(normalized)
    points = _statistics([r[None] for r in runs])
    rng = np.random.default_rng(seed)
    resampled = [r[rng.integers(0, r.size, size=(reps, r.size))] for r in runs]
    bootstrap = _statistics(resampled)
    tail = 100.0 * (1.0 - confidence) / 2.0
    result = {}
    for name, point in points.items():
        low, high = np.percentile(bootstrap[name], [tail, 100.0 - tail])
        result[name] = Interval(float(point[0]), float(low), float(high))
    return result


def score_table(
    raw: Mapping[str, float | Sequence[float]],
    *,
    reps: int = 2000,
    seed: int = 0,
    title: str = "Atari human-normalized scores",
) -> Table:
    """A rich table of raw mean score, random, human and HNS per game, then the mean, median
    and IQM of the HNS with 95% stratified bootstrap intervals."""
    normalized = normalize_scores(raw)
    table = Table(title=title)
    for column in ("game", "runs", "raw mean", "random", "human", "HNS"):
        table.add_column(column, justify="left" if column == "game" else "right")
    for game in sorted(raw):
        random, human = reference_score(game)
        raw_runs = np.atleast_1d(np.asarray(raw[game], np.float64))
        table.add_row(
            game,
            str(raw_runs.size),
            f"{raw_runs.mean():.1f}",
            f"{random:.1f}",
            f"{human:.1f}",
            f"{normalized[game].mean():.3f}",
        )
    table.add_section()
    for name, interval in aggregate(normalized, reps=reps, seed=seed).items():
        table.add_row(
            name.upper() if name == "iqm" else name,
            "",
            "",
            "",
            "",
            f"{interval.point:.3f} [{interval.low:.3f}, {interval.high:.3f}]",
        )
    return table
