"""Pig's evaluation: the share of optimal choices and the exact odds against the optimal player."""

import numpy as np
import pytest

from games.pig_optimal import ROLL, STOP, expected_visits, state_key
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
        "optimal_share", "win_vs_optimal", "optimal_share_on_path", "always_roll_share",
        "always_stop_share",
    }  # fmt: skip


def test_a_model_with_a_value_head_gets_its_error_against_the_exact_value(piglet):
    exact = piglet.exact_value

    class Model:
        def evaluate(self, obs):
            return np.zeros((len(obs), 2)), exact + 0.1

    class Agent:
        model = Model()

        def act(self, timestep, states):
            return np.full(len(states), STOP)

    assert piglet.measure(Agent())["value_abs_error"] == pytest.approx(0.1)
    assert np.all(np.abs(exact) <= 1.0) and exact.min() < 0.0 < exact.max()


def test_expected_visits_match_the_games_openspiel_plays(piglet):
    # hold-at-2 against the optimal player, both seats: the exact visit counts against the
    # counts of 4,000 games played through OpenSpiel with its own coin
    import pyspiel

    rules, rolls = piglet.solution.rules, piglet.solution.rolls()
    hold_at_2 = np.zeros(rules.shape, np.bool_)
    hold_at_2[:, :, :2] = True
    visits = expected_visits(rules, hold_at_2, rolls)
    game, rng, games = pyspiel.load_game("pig", PIGLET), np.random.default_rng(0), 4000
    counted = np.zeros(rules.shape)
    for index in range(games):
        state, agent = game.new_initial_state(), index % 2
        while not state.is_terminal():
            if state.is_chance_node():
                codes, probabilities = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(codes, p=probabilities)))
                continue
            key = state_key(state)
            table = hold_at_2 if state.current_player() == agent else rolls
            if state.current_player() == agent:
                counted[key] += 1.0 / games
            forced = key[0] + key[2] >= rules.winscore
            state.apply_action(ROLL if table[key] and not forced else STOP)
    assert visits.sum() == pytest.approx(counted.sum(), rel=0.03)
    busy = visits > 0.05
    np.testing.assert_allclose(counted[busy], visits[busy], rtol=0.15, atol=0.01)


def test_the_share_on_path_weights_the_states_good_play_meets(piglet):
    rolls = piglet.solution.rolls()
    optimal = np.array([ROLL if rolls[state_key(s)] else STOP for s in piglet.states])
    assert piglet.share_on_path(optimal) == pytest.approx(1.0)
    # wrong only where the turn total is 8 or more: states that optimal play almost never meets
    rare = np.array([state_key(s)[2] >= 8 for s in piglet.states])
    wrong_when_rare = np.where(rare, ROLL + STOP - optimal, optimal)
    assert piglet.shares(wrong_when_rare) < 0.95
    assert piglet.share_on_path(wrong_when_rare) > 0.99
