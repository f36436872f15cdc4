"""Matches: both seats, outcome accounting, random openings for deterministic players."""

import numpy as np

from games import BoardGame
from games.opponents import MinimaxOpponent, RandomOpponent
from mbrl.evaluation import elo_difference, play_match, rate_against_pool
from mbrl.evaluation.match import random_openings

GAME = BoardGame("tic_tac_toe")


class FirstLegal:
    name = "first"

    def choose(self, states, rng):
        return np.array([s.legal_actions()[0] for s in states])


def test_minimax_never_loses_and_results_add_up():
    result = play_match(GAME, MinimaxOpponent(GAME.game), RandomOpponent(), 20, seed=1)
    assert result.games == 20 == result.wins + result.draws + result.losses
    assert result.losses == 0 and result.wins >= 12
    assert result.wins == result.wins_first + result.wins_second


def test_seats_alternate():
    # A first-legal player against itself: the first player always wins tic-tac-toe this way.
    result = play_match(GAME, FirstLegal(), FirstLegal(), 6)
    assert (result.wins_first, result.losses_second, result.draws) == (3, 3, 0)


def test_openings_vary_and_are_shared_by_each_pair_of_games():
    states = random_openings(GAME, 8, plies=2, seed=0)
    histories = [s.history() for s in states]
    assert all(len(h) == 2 for h in histories)
    assert all(histories[2 * p] == histories[2 * p + 1] for p in range(4))
    assert len({tuple(h) for h in histories}) > 1
    result = play_match(GAME, FirstLegal(), FirstLegal(), 8, opening_plies=2)
    assert result.games == 8 and result.wins + result.losses > 0


def test_elo_from_scores():
    assert elo_difference(0.5, 10) == 0
    assert np.isclose(elo_difference(0.76, 100), 200, atol=2)
    assert np.isfinite(elo_difference(1.0, 10))
    assert rate_against_pool([(100.0, 0.5, 10), (300.0, 0.5, 30)]) == 250.0
