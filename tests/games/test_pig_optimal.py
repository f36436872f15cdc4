"""Pig's exact solution: OpenSpiel's rules as read, the Bellman equations, a brute force over
OpenSpiel states, simulated matches, shares of optimal choices and bad input."""

import numpy as np
import pyspiel
import pytest

from games.chance import ChanceGame, ChanceGameEnv
from games.pig_optimal import (
    ROLL,
    STOP,
    _horizon_value,
    match_win_probability,
    optimal_share,
    pig_rules,
    reachable_decision_states,
    solve_pig,
    state_key,
)

# Piglet with a coin: small, and stopping early matters (unlike pig with a small winscore).
PIGLET = {"winscore": 10, "dice_outcomes": 2, "piglet": True}


def openspiel_params(winscore, dice_outcomes=6, piglet=False, **more):
    return {"winscore": winscore, "diceoutcomes": dice_outcomes, "piglet": piglet, **more}


def play(state, *actions):
    for action in actions:
        state.apply_action(action)
    return state


def test_openspiel_pig_rolls_with_0_stops_with_1_and_a_1_passes_the_turn():
    game = pyspiel.load_game("pig", openspiel_params(10))
    state = game.new_initial_state()
    assert state.legal_actions() == [ROLL, STOP]
    assert [state.action_to_string(a) for a in (ROLL, STOP)] == ["roll", "stop"]
    play(state, ROLL)
    assert state.chance_outcomes() == [(code, 1 / 6) for code in range(6)]
    assert [state_key(state.child(code)) for code in range(1, 6)] == [
        (0, 0, t) for t in (2, 3, 4, 5, 6)
    ]
    busted = state.child(0)  # a 1: the turn total is lost and the opponent moves
    assert busted.current_player() == 1 and state_key(busted) == (0, 0, 0)
    stopped = play(state.child(4), STOP)  # a 5, then stop: banked, the turn passes
    assert stopped.current_player() == 1 and state_key(stopped) == (0, 5, 0)


def test_openspiel_pig_allows_only_the_winning_stop_and_ends_there():
    state = play(pyspiel.load_game("pig", openspiel_params(10)).new_initial_state(), ROLL, 5)
    play(state, ROLL, 3)  # 6 + 4: holding now would win
    assert state_key(state) == (0, 0, 10) and state.legal_actions() == [STOP]
    assert not state.is_terminal()  # reaching the score is not winning: stopping is
    play(state, STOP)
    assert state.is_terminal() and state.returns() == [1.0, -1.0]


def test_openspiel_pig_horizon_counts_decisions_and_ends_in_a_draw():
    game = pyspiel.load_game("pig", openspiel_params(10, horizon=3))
    state = play(game.new_initial_state(), STOP, STOP)
    assert not state.is_terminal()
    play(state, ROLL)  # the third decision: over before its die is cast
    assert state.is_terminal() and not state.is_chance_node() and state.returns() == [0.0, 0.0]
    state = play(game.new_initial_state(), ROLL, 5, ROLL, 3, STOP)  # a win on the last decision
    assert state.returns() == [1.0, -1.0]


@pytest.mark.parametrize("params", [{"winscore": 10}, PIGLET], ids=["pig", "piglet"])
def test_state_key_follows_random_playouts(params):
    game = pyspiel.load_game("pig", openspiel_params(**params))
    winscore = params["winscore"]
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(30):
        state, scores, turn_total, player = game.new_initial_state(), [0, 0], 0, 0
        while not state.is_terminal():
            if state.is_chance_node():
                code = int(rng.integers(len(state.chance_outcomes())))
                turn_total = (
                    0 if code == 0 else turn_total + (1 if params.get("piglet") else code + 1)
                )
                player = player if code else 1 - player
                state.apply_action(code)
                continue
            assert state.current_player() == player
            assert state_key(state) == (scores[player], scores[1 - player], turn_total)
            # The tensor is ordered by player, not mover, and clips the turn total: not read.
            tensor = np.asarray(state.observation_tensor(player)).reshape(3, winscore + 1)
            assert tensor[0].argmax() == min(turn_total, winscore)
            assert [tensor[1 + p].argmax() for p in (0, 1)] == scores
            checked += 1
            action = int(rng.choice(state.legal_actions()))
            if action == STOP:
                scores[player] += turn_total
                turn_total, player = 0, 1 - player
            state.apply_action(action)
        with pytest.raises(ValueError, match="not a two-player pig decision state"):
            state_key(state)
    assert checked > 300
    with pytest.raises(ValueError, match="rolling"):
        state_key(play(game.new_initial_state(), ROLL))


def test_the_die_is_read_from_openspiel():
    pig = pig_rules(10)
    assert pig.bust_probability == pytest.approx(1 / 6) and pig.increments == (2, 3, 4, 5, 6)
    assert pig.probabilities == pytest.approx([1 / 6] * 5) and pig.shape == (10, 10, 16)
    piglet = pig_rules(10, dice_outcomes=2, piglet=True)
    assert (piglet.bust_probability, piglet.increments, piglet.probabilities) == (0.5, (1,), (0.5,))


@pytest.mark.parametrize("params", [{"winscore": 20}, PIGLET], ids=["pig", "piglet"])
def test_solution_satisfies_the_bellman_equations_on_every_state(params):
    solution = solve_pig(**params)
    value = solution.win_probability
    winscore, _, size = value.shape
    sides = params.get("dice_outcomes", 6)
    bust = 1 / sides
    faces = [(1, 1 - bust)] if params.get("piglet") else [(f, bust) for f in range(2, sides + 1)]

    def mover_value(i, j, k):  # stopping wins once i + k reaches the winscore
        return 1.0 if i + k >= winscore else value[i, j, k]

    worst = 0.0
    for i in range(winscore):
        for j in range(winscore):
            for k in range(size):
                if i + k >= winscore:
                    assert value[i, j, k] == 1.0 and np.isnan(
                        solution.roll_win_probability[i, j, k]
                    )
                    continue
                stop = 1.0 - value[j, i + k, 0]  # the opponent starts its turn
                roll = bust * (1.0 - value[j, i, 0])
                roll += sum(p * mover_value(i, j, k + face) for face, p in faces)
                worst = max(
                    worst,
                    abs(max(roll, stop) - value[i, j, k]),
                    abs(roll - solution.roll_win_probability[i, j, k]),
                    abs(stop - solution.stop_win_probability[i, j, k]),
                )
    assert worst < 1e-9


def expectimax(game):
    """Player 0's expected return at every decision state reached from the start, keyed by
    (state string, decisions played), with the state: a plain recursion over OpenSpiel states,
    which ends because OpenSpiel's horizon ends a game after that many decisions. (Loops, not
    comprehensions, keep the stack at two frames a decision.)"""
    memo, decision_states = {}, {}

    def value(state, decisions):
        if state.is_terminal():
            return state.returns()[0]
        key = (str(state), decisions)
        if key in memo:
            return memo[key]
        if state.is_chance_node():
            expected = 0.0
            for code, probability in state.chance_outcomes():
                expected += probability * value(state.child(code), decisions)
            memo[key] = expected
        else:
            values = []
            for action in state.legal_actions():
                values.append(value(state.child(action), decisions + 1))
            memo[key] = max(values) if state.current_player() == 0 else min(values)
            decision_states[key] = state
        return memo[key]

    value(game.new_initial_state(), 0)
    return {key: (state, memo[key]) for key, state in decision_states.items()}


@pytest.mark.parametrize(
    ("params", "horizon"),
    [({"winscore": 6}, 60), ({"winscore": 4, "dice_outcomes": 2, "piglet": True}, 200)],
    ids=["pig", "piglet"],
)
def test_every_reachable_value_matches_an_expectimax_over_openspiel_states(params, horizon):
    # Compared where each state is first reached (within 10 decisions): with the rest of the
    # horizon to go, OpenSpiel's draw at the horizon moves no value by the tolerance.
    solution = solve_pig(**params)
    game = pyspiel.load_game("pig", openspiel_params(**params, horizon=horizon))
    first_reached = {}
    for (_, decisions), (state, expected) in expectimax(game).items():
        key = (state_key(state), state.current_player())
        if key not in first_reached or decisions < first_reached[key][0]:
            first_reached[key] = (decisions, expected)
    assert max(decisions for decisions, _ in first_reached.values()) <= 10
    for (key, player), (_, expected) in first_reached.items():
        mover_return = 2.0 * solution.win_probability[key] - 1.0
        assert (mover_return if player == 0 else -mover_return) == pytest.approx(expected, abs=1e-9)
    choices = reachable_decision_states(**params)
    assert {(state_key(s), s.current_player()) for s in choices} <= set(first_reached)


def test_the_horizon_check_solves_openspiels_game_with_its_horizon():
    # Piglet with a coin to 4 within 60 decisions: a losing player can stall for the draw.
    params, horizon = {"winscore": 4, "dice_outcomes": 2, "piglet": True}, 60
    game = pyspiel.load_game("pig", openspiel_params(**params, horizon=horizon))
    root = next(value for (_, decisions), (_, value) in expectimax(game).items() if not decisions)
    rules = pig_rules(**params)
    assert _horizon_value(rules, horizon, 1e-15) == pytest.approx((1 + root) / 2, abs=1e-12)
    gap = abs((1 + root) / 2 - solve_pig(**params, horizon=1000).win_probability[0, 0, 0])
    assert 1e-9 < gap < 1e-6
    with pytest.raises(ValueError, match=f"horizon 60 is too short .* by {gap:.3g} > 1e-09"):
        solve_pig(**params, horizon=horizon)


@pytest.mark.parametrize("winscore", [10, 20, 30])
def test_rolling_until_the_stop_wins_is_optimal_everywhere_for_small_winscores(winscore):
    solution = solve_pig(winscore)
    legal = ~np.isnan(solution.roll_win_probability)
    assert (solution.rolls() == legal).all()  # and no ties: rolling is strictly better
    assert (solution.roll_win_probability[legal] > solution.stop_win_probability[legal]).all()


@pytest.mark.parametrize(
    "params", [{"winscore": 10}, {"winscore": 20}, {"winscore": 30}, PIGLET], ids=str
)
def test_the_first_player_wins_more_than_half_under_optimal_play(params):
    solution = solve_pig(**params)
    assert 0.5 < solution.win_probability[0, 0, 0] < 1.0
    assert solution.horizon_gap < 1e-12  # OpenSpiel's 1000 decisions do not matter


@pytest.mark.slow
def test_pig_to_100_matches_neller_and_presser():
    # "Optimal play of the dice game Pig" (2004): the first player wins 53.06% of the time.
    assert solve_pig(100).win_probability[0, 0, 0] == pytest.approx(0.5306, abs=5e-5)


def test_optimal_play_beats_holding_at_8_at_the_predicted_rate():
    winscore, hold_at, num_games = 20, 8, 1000
    solution = solve_pig(winscore)
    holds = np.arange(solution.rules.shape[2]) < hold_at  # roll below 8, then stop
    odds = match_win_probability(solution.rules, solution.rolls(), holds)
    value = solution.win_probability[0, 0, 0]
    assert odds.moving_first >= value - 1e-9 and odds.moving_second >= 1 - value - 1e-9
    predicted = (odds.moving_first + odds.moving_second) / 2  # half the games in each seat
    assert min(odds) > 0.6

    game = ChanceGame("pig", {"winscore": winscore})
    env = ChanceGameEnv(game, batch_size=num_games)
    step, policy = env.reset(seeds=np.arange(num_games)), solution.policy()
    while not step.done.all():
        actions = []
        for b, state in enumerate(env.states):
            if step.done[b]:
                actions.append(STOP)  # ignored
            elif state.current_player() == b % 2:  # optimal play moves first in even slots
                actions.append(policy(state))
            else:
                actions.append(
                    ROLL if step.legal[b, ROLL] and state_key(state)[2] < hold_at else STOP
                )
        step = env.step(actions)
    won = np.mean([game.returns(state)[b % 2] == 1.0 for b, state in enumerate(env.states)])
    assert abs(won - predicted) < 4 * np.sqrt(predicted * (1 - predicted) / num_games)


def test_a_policy_against_itself_wins_one_seat_as_often_as_it_loses_the_other():
    solution = solve_pig(**PIGLET)
    odds = match_win_probability(solution.rules, solution.rolls(), solution.rolls())
    assert odds.moving_first == pytest.approx(solution.win_probability[0, 0, 0], abs=1e-10)
    assert odds.moving_first + odds.moving_second == pytest.approx(1.0, abs=1e-10)


def test_policies_that_would_pass_for_ever_are_refused():
    rules = pig_rules(10)
    with pytest.raises(ValueError, match=r"never finish a game at scores \(0, 0\)"):
        match_win_probability(rules, False, np.arange(rules.shape[2]) > 0)  # both pass at 0


def test_optimal_share_is_one_for_optimal_play_and_lower_for_always_rolling():
    solution = solve_pig(**PIGLET)
    states = reachable_decision_states(**PIGLET)
    assert optimal_share(solution.policy(), solution, states) == 1.0
    always_roll = optimal_share(lambda state: ROLL, solution, states)
    assert always_roll < 0.5  # and the rest is stopping's, this game having no ties:
    assert always_roll + optimal_share(lambda state: STOP, solution, states) == pytest.approx(1)
    # Pig to 20 cannot tell them apart: there, always rolling is optimal play.
    pig = solve_pig(20)
    assert optimal_share(lambda state: ROLL, pig, reachable_decision_states(20)) == 1.0


def test_reachable_decision_states_are_every_choice_without_a_1():
    # Faces add 2 to 6, so no score or turn total of 1; every other choice is reachable.
    winscore = 10
    states = reachable_decision_states(winscore)
    found = [(state_key(s), s.current_player()) for s in states]
    expected = {
        ((i, j, k), player)
        for i in range(winscore)
        for j in range(winscore)
        for k in range(winscore - i)
        for player in (0, 1)
        if 1 not in (i, j, k)
    }
    assert len(found) == len(set(found)) and set(found) == expected
    assert all(s.legal_actions() == [ROLL, STOP] for s in states)
    # With the forced stops: scores and a turn total that reach the winscore, stop the only move.
    every = reachable_decision_states(winscore, choices_only=False)
    forced = {(state_key(s), s.current_player()) for s in every} - expected
    assert len(every) == len(found) + len(forced)
    assert forced and all(i + k >= winscore for (i, _, k), _ in forced)
    assert all(
        s.legal_actions() == [STOP] for s in every if (state_key(s), s.current_player()) in forced
    )


def test_optimal_actions_name_both_on_a_tie_and_only_stop_where_it_wins():
    # Piglet to 30 with a three-sided die has exact ties, e.g. 25 against 26 with 2 in hand.
    solution = solve_pig(30, dice_outcomes=3, piglet=True)
    assert solution.optimal_actions(25, 26, 2) == {ROLL, STOP}
    assert solution.optimal_actions(0, 0, 0) == {ROLL}
    assert solution.optimal_actions(25, 0, 5) == {STOP}  # the only legal move
    with pytest.raises(ValueError, match="no decision at"):
        solution.optimal_actions(30, 0, 0)


def test_a_horizon_that_changes_the_value_is_refused_in_one_line():
    with pytest.raises(ValueError, match="horizon 12 is too short for winscore 20") as error:
        solve_pig(20, horizon=12)
    assert "\n" not in str(error.value)
    assert solve_pig(20, horizon=200).horizon_gap < 1e-9


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"winscore": 0}, "winscore must be an integer from 1 to 100 .* got 0"),
        ({"winscore": 101}, "winscore must be an integer from 1 to 100 .* got 101"),
        ({"winscore": 2.5}, "winscore must be an integer .* got 2.5"),
        ({"winscore": True}, "winscore must be an integer .* got True"),
        ({"winscore": 10, "dice_outcomes": 1}, "dice_outcomes must be an integer from 2 .* got 1"),
        ({"winscore": 10, "piglet": "yes"}, "piglet must be True or False, got 'yes'"),
        ({"winscore": 10, "horizon": 0}, "horizon must be an integer from 1 .* got 0"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(params, message):
    with pytest.raises(ValueError, match=message) as error:
        solve_pig(**params)
    assert "\n" not in str(error.value)


def test_optimal_share_refuses_states_of_another_game_and_no_states():
    solution = solve_pig(10)
    with pytest.raises(ValueError, match="given to the solution of pig"):
        optimal_share(lambda state: ROLL, solution, reachable_decision_states(12))
    with pytest.raises(ValueError, match="at least one state"):
        optimal_share(lambda state: ROLL, solution, [])
