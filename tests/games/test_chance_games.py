"""OpenSpiel games with chance nodes: rules, codes, rewards, seeding, checkpoints, bad input."""

import re

import numpy as np
import pytest

from games.chance import ChanceGame, ChanceGameEnv

# Small enough that a random playout ends in well under a second.
SMALL = {
    "2048": {"max_tile": 64},
    "pig": {"winscore": 10},
    "backgammon": {"hyper_backgammon": True},
}


def first_legal(legal):
    return int(np.flatnonzero(legal)[0]) if legal.any() else 0


def random_playout(env, seeds, policy_seed=0, most_steps=2000):
    """Play random legal decisions until every game ends, checking the protocol at each step;
    returns the rewards [T, B], the players who moved [T, B] (-1 once over) and the last step."""
    rng = np.random.default_rng(policy_seed)
    step = env.reset(seeds=seeds)
    rewards, movers = [], []
    for _ in range(most_steps):
        for b, state in enumerate(env.states):
            assert not env.game.is_chance(state)  # the env resolves chance before answering
            if step.terminated[b]:
                assert step.to_play[b] == -1 and not step.legal[b].any()
            else:  # legal never empty before the end, and OpenSpiel's own list
                assert step.to_play[b] == state.current_player()
                assert np.flatnonzero(step.legal[b]).tolist() == state.legal_actions()
        if step.done.all():
            return np.array(rewards), np.array(movers), step
        movers.append(step.to_play.copy())
        step = env.step(
            [rng.choice(np.flatnonzero(legal)) if legal.any() else 0 for legal in step.legal]
        )
        rewards.append(step.reward.copy())
    raise AssertionError(f"games did not end in {most_steps} steps")


@pytest.mark.parametrize("name", sorted(SMALL))
def test_random_playouts_end_and_rewards_add_up_to_the_returns(name):
    game = ChanceGame(name, SMALL[name])
    env = ChanceGameEnv(game, batch_size=3)
    rewards, movers, step = random_playout(env, seeds=[0, 1, 2])
    assert step.terminated.all() and step.obs.shape == (3, *game.obs_shape)
    for b, state in enumerate(env.states):
        returns = game.returns(state)
        played = movers[:, b] >= 0
        for player in range(game.num_players):
            # Rewards go to the mover; in a zero-sum game the opponent gets the negation.
            signs = np.where(movers[played, b] == player, 1.0, -1.0)
            assert np.sum(signs * rewards[played, b]) == pytest.approx(returns[player])
        if name == "2048":
            assert returns[0] > 0  # merges pay
        else:
            assert sorted(returns) == [-1.0, 1.0]  # somebody won


def test_hyper_backgammon_is_won_by_the_player_who_bears_off_first():
    # OpenSpiel's own returns stay 0-0 in hyper-backgammon (it looks for 15 borne-off checkers).
    game = ChanceGame("backgammon", {"hyper_backgammon": True})
    env = ChanceGameEnv(game, batch_size=2)
    _, movers, _ = random_playout(env, seeds=[3, 4])
    for b, state in enumerate(env.states):
        last_mover = movers[movers[:, b] >= 0, b][-1]
        borne_off = re.search(r"Scores, X: (\d+), O: (\d+)", str(state)).groups()
        assert borne_off[last_mover] == "3"  # X is player 0
        assert game.returns(state)[last_mover] == 1.0


@pytest.mark.parametrize("name", sorted(SMALL))
def test_a_game_depends_on_its_seed_not_its_slot_or_batch_size(name):
    game = ChanceGame(name, SMALL[name])

    def history(seed, seeds):
        env = ChanceGameEnv(game, batch_size=len(seeds), seed=len(seeds))
        env.reset(seeds=seeds)
        slot = seeds.index(seed)
        policy = np.random.default_rng(0)  # the same decisions for this game, whatever its slot
        for _ in range(30):
            legal = env.timestep().legal
            actions = [first_legal(legal[b]) for b in range(len(seeds))]
            if legal[slot].any():
                actions[slot] = policy.choice(np.flatnonzero(legal[slot]))
            env.step(actions)
        return env.states[slot].history()

    alone = history(7, [7])
    assert history(7, [1, 2, 7]) == alone
    assert history(7, [7, 8]) == alone
    assert history(8, [8]) != alone


@pytest.mark.parametrize("name", sorted(SMALL))
def test_chance_distribution_is_openspiels_and_sums_to_one(name):
    game = ChanceGame(name, SMALL[name])
    rng = np.random.default_rng(0)
    state, checked = game.new_state(), 0
    while checked < 40:
        if state.is_terminal():
            state = game.new_state()
        elif game.is_chance(state):
            distribution = game.chance_distribution(state)
            assert distribution.shape == (game.num_chance_outcomes,)
            assert distribution.sum() == pytest.approx(1.0, abs=1e-12)
            expected = np.zeros(game.num_chance_outcomes)
            for code, probability in state.chance_outcomes():
                expected[code] = probability
            np.testing.assert_array_equal(distribution, expected)
            assert not game.legal_mask(state).any()
            state = game.apply_chance(state, int(rng.choice(np.flatnonzero(distribution))))
            checked += 1
        else:
            state = game.apply_decision(state, rng.choice(state.legal_actions())).state


def test_pigs_die_is_uniform_over_six_codes():
    game = ChanceGame("pig", {"winscore": 10})
    state = game.apply_decision(game.new_state(), 0).state  # roll
    np.testing.assert_allclose(game.chance_distribution(state), np.full(6, 1 / 6), rtol=1e-12)
    assert game.num_chance_outcomes == 6 and game.num_actions == 2


def test_sampled_pig_rolls_follow_the_die():
    env = ChanceGameEnv(ChanceGame("pig", {"winscore": 20}), batch_size=16, seed=0)
    counts = np.zeros(6)
    for _ in range(200):
        # Roll whenever allowed (pig forbids it once the turn would win): a die per roll.
        step = env.step([0 if legal[0] else 1 for legal in env.timestep().legal])
        for codes in env.last_chance_codes:
            np.add.at(counts, codes, 1)
        if step.done.any():
            env.reset(indices=np.flatnonzero(step.done))
    expected = counts.sum() / 6
    chi_square = ((counts - expected) ** 2 / expected).sum()
    assert counts.sum() > 2000
    assert chi_square < 20.52  # the 0.999 quantile of chi-square with 5 degrees of freedom


def test_a_decision_gives_an_afterstate_and_leaves_the_parent_untouched():
    game = ChanceGame("2048", {"max_tile": 64})
    parent = game.apply_chance(game.apply_chance(game.new_state(), 0), 2)  # 2s in the corner
    assert not game.is_chance(parent) and parent.history() == [0, 2]
    afterstate = game.apply_decision(parent, 3)  # left: the two 2s merge into a 4
    assert game.is_chance(afterstate.state) and afterstate.mover == 0
    assert afterstate.reward == 4.0 and not afterstate.terminal
    assert parent.history() == [0, 2]
    with pytest.raises(ValueError, match="chance outcome 0 is impossible"):
        game.apply_chance(afterstate.state, 0)  # the merged 4 sits on cell 0
    with pytest.raises(ValueError, match="cannot play decision 1 at a chance node"):
        game.apply_decision(afterstate.state, 1)


def test_apply_resolves_chance_and_reports_the_codes():
    game = ChanceGame("pig", {"winscore": 10})
    state = game.new_state()
    transitions = [game.apply(state, 0, np.random.default_rng(seed)) for seed in range(60)]
    for transition in transitions:
        (code,) = transition.chance_codes
        assert transition.turn_changed == (code == 0)  # rolling a 1 passes the turn
        assert transition.state.history() == [0, code] and transition.reward == 0.0
    assert {t.chance_codes for t in transitions} == {(code,) for code in range(6)}
    assert state.history() == []


def test_observations_carry_who_is_to_move_in_two_player_games():
    game = ChanceGame("pig", {"winscore": 10})
    assert game.obs_shape == (3 * 11 + 1,) and ChanceGame("2048").obs_shape == (12, 4, 4)
    state = game.new_state()
    assert game.observation(state)[-1] == 0
    state = game.apply_decision(state, 1).state  # stop at once: player 1 to move
    assert game.observation(state)[-1] == 1


def test_finished_games_wait_for_reset_and_illegal_actions_are_named():
    env = ChanceGameEnv(ChanceGame("pig", {"winscore": 10}), batch_size=2)
    with pytest.raises(ValueError, match="action 2 is illegal"):
        env.step([0, 2])
    assert env.states[0].history() == []  # the refused step played nothing
    rng = np.random.default_rng(0)
    while not env.timestep().done[1]:
        env.step(rng.integers(0, 2, size=2))
    history = env.states[1].history()
    step = env.step([0, 0])
    assert (
        step.reward[1] == 0
        and env.last_chance_codes[1] == []
        and env.states[1].history() == history
    )
    step = env.reset(indices=[1])
    assert not step.done[1] and step.legal[1].all()


def test_move_limit_counts_decisions_and_truncates():
    env = ChanceGameEnv(ChanceGame("2048", max_moves=2), batch_size=1)
    step = env.step([first_legal(env.timestep().legal[0])])
    assert not step.truncated[0]
    step = env.step([first_legal(step.legal[0])])
    assert step.truncated[0] and not step.terminated[0] and env.moves[0] == 2


def test_random_openings_play_decisions_and_chance_but_never_end_the_game():
    game = ChanceGame("pig", {"winscore": 10, "diceoutcomes": 2, "piglet": True}, max_moves=12)
    env = ChanceGameEnv(game, batch_size=1)
    lengths, scores = set(), set()
    for game_id in range(80):
        env.reset(seeds=[game_id])
        played = env.play_opening(0, np.random.default_rng(game_id), 20)
        state = env.states[0]
        assert not state.is_terminal() and not game.is_chance(state)
        assert played == env.moves[0] < game.max_moves  # stops short of the move limit too
        step = env.timestep()
        np.testing.assert_array_equal(step.legal[0], game.legal_mask(state))
        lengths.add(played)
        scores.add(str(state).splitlines()[0])
    assert lengths == set(range(12))  # 0..11: the 12th decision would reach max_moves
    assert len(scores) > 10  # openings reach many score lines


def test_state_dict_round_trip_resumes_the_same_games():
    game = ChanceGame("backgammon", {"hyper_backgammon": True})
    env = ChanceGameEnv(game, batch_size=2, seed=5)
    for _ in range(6):
        env.step([first_legal(legal) for legal in env.timestep().legal])
    saved = env.state_dict()
    resumed = ChanceGameEnv(game, batch_size=2, seed=99)
    resumed.load_state_dict(saved)
    assert resumed.moves.tolist() == env.moves.tolist()
    assert resumed.last_chance_codes == env.last_chance_codes
    for _ in range(6):  # the generators resume too: the same rolls follow
        actions = [first_legal(legal) for legal in env.timestep().legal]
        expected, got = env.step(actions), resumed.step(actions)
        for field, value in expected._asdict().items():
            np.testing.assert_array_equal(getattr(got, field), value)
    assert [s.history() for s in resumed.states] == [s.history() for s in env.states]


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        pytest.param(lambda h: [99, *h[1:]], "move 99 illegally", id="decision"),  # pig has 2
        pytest.param(lambda h: [h[0], 40], "chance outcome 40 illegally", id="chance"),
        pytest.param(lambda h: [h[0]], "stops at a chance node", id="unresolved"),
    ],
)
def test_a_corrupt_history_is_refused(corrupt, message):
    env = ChanceGameEnv(ChanceGame("pig", {"winscore": 10}), batch_size=1)
    env.step([0])  # roll: history is [roll, die]
    saved = env.state_dict()
    saved["histories"] = [corrupt(saved["histories"][0])]
    with pytest.raises(ValueError, match=message):
        ChanceGameEnv(env.game, batch_size=1).load_state_dict(saved)


def test_a_checkpoint_for_another_batch_size_is_refused():
    game = ChanceGame("pig", {"winscore": 10})
    with pytest.raises(ValueError, match="this run plays 2 at once"):
        ChanceGameEnv(game, batch_size=2).load_state_dict(ChanceGameEnv(game, 1).state_dict())


@pytest.mark.parametrize(
    ("name", "params", "reason"),
    [
        ("tic_tac_toe", {}, "no chance nodes"),
        ("markov_soccer", {}, "dynamics are simultaneous"),
        ("kuhn_poker", {}, "hidden information"),
        ("laser_tag", {}, "GENERAL_SUM"),
        ("pig", {"players": 3}, "3 players"),
        ("stones_and_gems", {}, "chance is sampled"),
    ],
)
def test_games_outside_the_class_are_refused_with_the_reason(name, params, reason):
    with pytest.raises(ValueError, match=reason) as error:
        ChanceGame(name, params)
    assert name in str(error.value) and "Tested games" in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("pig", {"dice": 6}, "no parameter 'dice'"),
        ("2048", {"max_tile": "big"}, "rejected parameters"),
        ("no_such_game", {}, "unknown game 'no_such_game'"),
    ],
)
def test_bad_names_and_parameters_are_refused_in_one_line(name, params, message):
    with pytest.raises(ValueError, match=message) as error:
        ChanceGame(name, params)
    assert "\n" not in str(error.value)


def test_2048_spawns_a_four_one_time_in_ten():
    env = ChanceGameEnv(ChanceGame("2048", {"max_tile": 64}), batch_size=16, seed=0)
    codes = []
    for _ in range(100):
        step = env.step([first_legal(legal) for legal in env.timestep().legal])
        codes += [code for game_codes in env.last_chance_codes for code in game_codes]
        if step.done.any():
            env.reset(indices=np.flatnonzero(step.done))
    fours = np.mean(np.array(codes) % 2)  # code = 2 * cell + (tile == 4)
    assert len(codes) > 1000
    assert abs(fours - 0.1) < 4 * np.sqrt(0.1 * 0.9 / len(codes))  # 4 binomial deviations


def test_2048_shows_each_cell_as_a_one_hot_of_its_tile_exponent():
    game = ChanceGame("2048", {"max_tile": 64})
    state, _ = game.resolve_chance(game.new_state(), np.random.default_rng(0))
    obs = game.observation(state)
    assert obs.shape == game.obs_shape == (7, 4, 4)  # empty, 2, 4, ..., 64
    assert (obs.sum(0) == 1).all()
    tiles = np.asarray(state.observation_tensor(0)).reshape(4, 4)
    np.testing.assert_array_equal(np.where(tiles > 0, 2.0 ** obs.argmax(0), 0.0), tiles)
