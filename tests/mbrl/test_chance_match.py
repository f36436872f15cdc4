"""Two-player games with chance against a random opponent (mbrl.evaluation.chance_match)."""

import numpy as np
import pytest

from games.pig_optimal import ROLL, STOP, solve_pig, state_key
from mbrl.evaluation.chance_match import RandomOpponentMatch

PIGLET = {"winscore": 10, "diceoutcomes": 2, "piglet": True}


class PolicyAgent:
    """``act`` from a function of the state; records the players it was asked about."""

    def __init__(self, policy):
        self.policy, self.asked = policy, []

    def act(self, timestep, states):
        self.asked.append(timestep.to_play.copy())
        assert len(states) == len(timestep.obs) == len(timestep.legal)
        return np.array([self.policy(state) for state in states])


def test_the_optimal_piglet_player_beats_random_and_always_stopping_never_wins():
    rolls = solve_pig(10, dice_outcomes=2, piglet=True).rolls()

    def optimal(state):
        key = state_key(state)
        forced = key[0] + key[2] >= 10
        return ROLL if rolls[key] and not forced else STOP

    match = RandomOpponentMatch("pig", PIGLET, games=64, max_moves=200, seed=0)
    strong = match.measure(PolicyAgent(optimal))
    assert strong["wins_vs_random"] > 0.85
    assert strong["score_vs_random"] == pytest.approx(2 * strong["wins_vs_random"] - 1)
    never_scores = match.measure(PolicyAgent(lambda state: STOP))
    assert never_scores["wins_vs_random"] == 0.0


def test_the_agent_plays_both_seats_and_is_asked_only_on_its_turns():
    agent = PolicyAgent(lambda state: int(state.legal_actions()[0]))
    match = RandomOpponentMatch("backgammon", {"hyper_backgammon": True}, games=4, seed=3)
    first = match.measure(agent)
    asked = np.concatenate(agent.asked)
    assert set(asked.tolist()) == {0, 1}  # the first seat in even games, the second in odd
    # every game of hyper-backgammon ends with a winner (+1) or a loser (-1)
    assert first["score_vs_random"] == pytest.approx(2 * first["wins_vs_random"] - 1)
    assert match.measure(PolicyAgent(agent.policy)) == first  # its dice come from its seeds


def test_a_match_needs_two_players_and_two_games():
    with pytest.raises(ValueError, match="1 players"):
        RandomOpponentMatch("2048", {"max_tile": 64})
    with pytest.raises(ValueError, match="at least 2 games"):
        RandomOpponentMatch("pig", PIGLET, games=1)
