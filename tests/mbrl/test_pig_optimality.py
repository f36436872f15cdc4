"""Pig's evaluation: the share of optimal choices and the exact odds against the optimal player."""

import numpy as np
import pytest

from games.pig_optimal import ROLL, STOP, state_key
from mbrl.evaluation.pig_optimality import PigOptimality

PIGLET = {"winscore": 10, "diceoutcomes": 2, "piglet": True}


@pytest.fixture(scope="module")
def piglet():
    return PigOptimality(PIGLET)


def hold_at(piglet, h):
    return np.array([ROLL if state_key(s)[2] < h else STOP for s in piglet.states])


def test_the_optimal_player_scores_one_and_even_odds(piglet):
    rolls = piglet.solution.rolls()
    optimal = np.array([ROLL if rolls[state_key(s)] else STOP for s in piglet.states])
    assert piglet.shares(optimal) == 1.0
    assert piglet.win_probability_against_optimal(optimal) == pytest.approx(0.5, abs=1e-9)


def test_trivial_and_heuristic_players_score_what_the_solution_says(piglet):
    assert len(piglet.states) == 1100
    assert piglet.always_roll_share == pytest.approx(392 / 1100)
    assert piglet.always_stop_share == pytest.approx(1 - 392 / 1100)
    assert piglet.shares(hold_at(piglet, 2)) == pytest.approx(0.858, abs=1e-3)
    assert piglet.win_probability_against_optimal(hold_at(piglet, 2)) == pytest.approx(
        0.474, abs=1e-3
    )
    # always rolling runs into tails; holding at 1 is worse than at 2
    assert piglet.win_probability_against_optimal(hold_at(piglet, 99)) < 0.05
    assert piglet.win_probability_against_optimal(hold_at(piglet, 1)) < 0.474


def test_measure_asks_the_agent_about_every_state(piglet):
    asked = []

    class Agent:
        def act(self, timestep, states):
            asked.append((timestep.obs.shape, len(states)))
            return np.where(timestep.legal[:, ROLL], ROLL, STOP)

    record = piglet.measure(Agent())
    assert asked == [((1100, 34), 1100)]
    assert record["optimal_share"] == pytest.approx(piglet.always_roll_share)
    assert set(record) == {
        "optimal_share", "win_vs_optimal", "always_roll_share", "always_stop_share"
    }  # fmt: skip
