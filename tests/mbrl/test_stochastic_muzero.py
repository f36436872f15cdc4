"""Stochastic MuZero on the one core: the unroll loss, the latent model as a `search.ChanceModel`,
and `algo=stochastic_muzero` end to end on Piglet (two players, turns that pass by chance) and
2048 (one player)."""

import dataclasses
import json

import numpy as np
import pytest
import torch

import search
from mbrl.checkpoint import load_checkpoint
from mbrl.config import AlgoConfig, ModelConfig
from mbrl.networks.stochastic_muzero import StochasticMuZeroNet
from mbrl.objectives import StochasticMuZeroObjective
from mbrl.selfplay.stochastic_latent_model import StochasticLatentModel
from mbrl.train import train
from tests.mbrl.test_train import scalars

TINY = ModelConfig(
    channels=16, blocks=1, latent_dim=16, head_hidden=16, support_size=5, reward_support_size=5
)


def unroll_batch(k=3, batch=32, actions=2, seed=0, obs_shape=(4,)):
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.rand(batch, *obs_shape, generator=g),
        "future_obs": torch.rand(batch, k, *obs_shape, generator=g),
        "actions": torch.randint(0, actions, (batch, k), generator=g),
        "policy": torch.softmax(torch.randn(batch, k + 1, actions, generator=g), -1),
        "reward": torch.randn(batch, k + 1, generator=g),
        "value": 3 * torch.randn(batch, k + 1, generator=g),
        "policy_mask": torch.ones(batch, k + 1),
        "value_mask": torch.ones(batch, k + 1),
        "reward_mask": torch.ones(batch, k + 1),
        "turn_change": torch.randint(0, 2, (batch, k + 1), generator=g).float(),
        "weights": torch.ones(batch),
    }


@pytest.mark.parametrize(
    "obs_shape, torso", [((4,), "auto"), ((3, 4, 4), "auto"), ((3, 4, 4), "lines")]
)
def test_the_unroll_loss_falls_when_fitting_a_batch(obs_shape, torso):
    # Flat observations get the MLP torso, boards [C, H, W] the residual convolutions unless
    # told otherwise (2048's preset reads its board line by line).
    torch.manual_seed(0)
    settings = dataclasses.replace(TINY, torso=torso)
    net = StochasticMuZeroNet(obs_shape, 2, num_codes=8, settings=settings)
    expected = {"auto": "conv" if len(obs_shape) == 3 else "mlp", "lines": "lines"}[torso]
    assert net.torso == expected
    objective = StochasticMuZeroObjective(AlgoConfig(unroll_steps=3), two_player=True)
    batch = unroll_batch(obs_shape=obs_shape)
    optimizer = torch.optim.Adam(net.parameters(), 3e-3)
    losses = []
    for _ in range(80):
        output = objective(net, batch)
        optimizer.zero_grad()
        output.loss.backward()
        optimizer.step()
        losses.append(output.loss.item())
    assert losses[-1] < 0.7 * losses[0], losses
    assert output.per_sample.shape == (32,)
    assert set(output.metrics) >= {
        "policy_loss", "value_loss", "reward_loss", "q_loss", "chance_loss",
        "commitment_loss", "turn_loss", "value_abs_error",
    }  # fmt: skip


HEADS = {
    "policy_weight": "policy_head",
    "value_weight": "q_head",  # Q is a value: it shares value_weight
    "reward_weight": "turn_head",  # the turn's logit is part of the transition's loss
    "chance_weight": "chance_head",
    "commitment_weight": "chance_encoder",
}


@pytest.mark.parametrize("weight", sorted(HEADS))
def test_every_term_reaches_its_head(weight):
    torch.manual_seed(0)
    net = StochasticMuZeroNet((4,), 2, num_codes=8, settings=TINY)
    weights = dict.fromkeys(HEADS, 0.0) | {weight: 1.0}
    objective = StochasticMuZeroObjective(AlgoConfig(unroll_steps=2, **weights), two_player=True)
    objective(net, unroll_batch(k=2)).loss.backward()
    head = getattr(net, HEADS[weight])
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in head.parameters())


def test_the_dynamics_loss_trains_the_encoder_through_the_straight_through_code():
    torch.manual_seed(0)
    net = StochasticMuZeroNet((4,), 2, num_codes=8, settings=TINY)
    weights = dict.fromkeys(HEADS, 0.0) | {"value_weight": 1.0}
    StochasticMuZeroObjective(AlgoConfig(unroll_steps=2, **weights))(
        net, unroll_batch(k=2)
    ).loss.backward()
    assert net.chance_encoder[0].weight.grad.abs().sum() > 0


def test_the_afterstate_q_learns_its_own_targets_where_given():
    # algo.q_td_steps puts the afterstate Q's targets in the batch as "q_value"
    net = StochasticMuZeroNet((4,), 2, num_codes=8, settings=TINY)
    objective = StochasticMuZeroObjective(AlgoConfig(unroll_steps=2))
    batch = unroll_batch(k=2)
    plain = objective(net, batch).metrics
    same = objective(net, batch | {"q_value": batch["value"]}).metrics
    other = objective(net, batch | {"q_value": batch["value"] + 5}).metrics
    assert same["q_loss"] == plain["q_loss"] and other["q_loss"] != plain["q_loss"]
    assert other["value_loss"] == plain["value_loss"]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["algo=muzero", "algo.q_td_steps=1"], "algo=muzero has no afterstates"),
        (["algo=stochastic_muzero", "algo.q_td_steps=11"], "got 11"),
        (["algo=stochastic_muzero", "algo.q_td_steps=-1"], "got -1"),
    ],
)
def test_the_afterstate_q_horizon_is_checked(tiny_config, tmp_path, overrides, message):
    from mbrl.validation import validate

    with pytest.raises(ValueError, match=message):
        validate(tiny_config(f"run_dir={tmp_path}", "game=piglet", *overrides))


def test_one_player_games_leave_the_turn_head_alone():
    net = StochasticMuZeroNet((4,), 2, num_codes=8, settings=TINY)
    StochasticMuZeroObjective(AlgoConfig(unroll_steps=2))(net, unroll_batch(k=2)).loss.backward()
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in net.turn_head.parameters())


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
def test_the_latent_model_drives_the_stochastic_searches_with_learned_turns(policy):
    torch.manual_seed(0)
    net = StochasticMuZeroNet((4,), 3, num_codes=5, settings=TINY).eval()
    with torch.no_grad():  # the turn passes after every chance edge
        net.turn_head[-1].bias.fill_(50.0)
    model = StochasticLatentModel(net, discount=0.9, two_player=True)
    obs = np.random.default_rng(0).random((6, 4), dtype=np.float32)
    calls = []

    def record(name, fn):
        def wrapped(embedding, index):
            calls.append((name, len(index)))
            return fn(embedding, index)

        return wrapped

    chance_model = model.recurrent_fn
    assert chance_model.num_chance_outcomes == 5
    traced = search.ChanceModel(
        record("decision", chance_model.decision_fn), record("chance", chance_model.chance_fn), 5
    )
    settings = search.SearchSettings(policy=policy, num_simulations=12)
    output = search.run(model.search_root(None, obs), traced, settings, keys=1)
    assert output.visit_counts.sum(1).tolist() == [12] * 6
    # each simulation expands one node per root: by one call for the roots whose new node is an
    # afterstate and one for those whose new node is a state
    assert sum(rows for _, rows in calls) == 12 * 6 and len(calls) <= 2 * 12
    assert {name for name, _ in calls} == {"decision", "chance"}
    assert output.tree.node_visits.shape == (6, 13)
    discounts = output.tree.children_discounts[output.tree.children_index >= 0]
    decision_edge, chance_edge = np.isclose(discounts, 1.0), np.isclose(discounts, -0.9)
    assert (decision_edge | chance_edge).all() and chance_edge.any()  # the turn head's -gamma


def test_a_chance_model_refuses_a_value_prefix():
    net = StochasticMuZeroNet((4,), 2, num_codes=4, settings=TINY).eval()
    model = StochasticLatentModel(net, discount=1.0, two_player=False)
    obs = np.zeros((1, 4), np.float32)
    with pytest.raises(ValueError, match="value prefix"):
        search.run(
            model.root(obs), model.recurrent_fn, search.SearchSettings(), value_prefix_horizon=5
        )


def test_stochastic_muzero_trains_on_piglet_checkpoints_resumes_and_is_scored(
    tiny_config, tmp_path
):
    overrides = [
        f"run_dir={tmp_path}",
        "game=piglet",
        "algo=stochastic_muzero",
        "algo.chance_codes=4",
        "algo.q_td_steps=1",  # the afterstate Q's own targets, reanalysed, end to end
        "trainer.log_every=4",
        "optim.lr=0.01",
        "eval.games=2",
        "eval.every=40",
    ]
    summary = train(tiny_config(*overrides, "trainer.max_steps=80", "trainer.checkpoint_every=40"))
    assert summary["steps"] == 80
    losses = scalars(tmp_path, "train/loss")
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3, losses
    assert scalars(tmp_path, "train/chance_loss") and scalars(tmp_path, "train/turn_loss")
    shares = scalars(tmp_path, "eval/optimal_share")
    assert len(shares) == 2 and all(0.0 <= share <= 1.0 for share in shares)
    assert scalars(tmp_path, "eval/always_roll_share")[-1] == pytest.approx(392 / 1100)
    checkpoint = load_checkpoint(tmp_path)
    assert checkpoint["mbrl"]["algo"] == "stochastic_muzero"
    assert checkpoint["mbrl"]["game"]["kind"] == "chance"
    # mbrl-eval rebuilds the run's own search model: the same score as the run's last evaluation
    from mbrl.evaluate import EvalCommandConfig, evaluate

    report = evaluate(EvalCommandConfig(checkpoint=str(tmp_path), opponents=[]))
    assert report["optimal_share"] == pytest.approx(shares[-1])
    resumed = train(tiny_config(*overrides, "trainer.max_steps=90", "trainer.checkpoint_every=40"))
    assert resumed["resumed_from"] and resumed["steps"] == 90


@pytest.mark.parametrize("algo", ["stochastic_muzero", "muzero", "chance_alphazero"])
def test_each_agent_trains_on_2048(tiny_config, tmp_path, algo):
    # One player; MuZero's deterministic model and the true-chance AlphaZero are the baselines.
    summary = train(
        tiny_config(
            f"run_dir={tmp_path}",
            "game=game_2048",
            f"algo={algo}",
            "trainer.max_steps=30",
            "trainer.log_every=5",
            "eval.games=2",
        )
    )
    assert summary["steps"] == 30
    assert scalars(tmp_path, "eval/return_mean")[-1] > 0
    from mbrl.evaluate import EvalCommandConfig, evaluate

    report = evaluate(EvalCommandConfig(checkpoint=str(tmp_path), games=2, parallel=2))
    assert report["episodes"] == 2 and report["return_mean"] > 0
    # the probe that takes a learned 2048 model apart reads every agent's checkpoint
    from benchmarks import game2048_model_probe

    out = tmp_path / "probe.jsonl"
    game2048_model_probe.main([str(tmp_path), "--episodes", "2", "--out", str(out)])
    players = {json.loads(line)["player"] for line in out.read_text().splitlines()}
    assert {"random", "true reward", "true model + learned value"} <= players
    assert ("learned model" in players) == (algo != "chance_alphazero")
    assert ("learned reward" in players) == (algo != "chance_alphazero")
    assert ("learned model, through codes" in players) == (algo == "stochastic_muzero")


# -- the true-chance reference ----------------------------------------------------------------


def piglet_model(discount=1.0):
    from games.chance import ChanceGame
    from mbrl.networks.muzero import MuZeroNet
    from mbrl.selfplay.chance_game_model import ChanceGameModel

    torch.manual_seed(0)
    game = ChanceGame("pig", {"winscore": 10, "diceoutcomes": 2, "piglet": True})
    net = MuZeroNet(game.obs_shape, game.num_actions, TINY).eval()
    return game, ChanceGameModel(game, net, discount=discount)


def test_the_true_chance_model_values_an_afterstate_by_its_exact_expectation():
    game, model = piglet_model()
    state = game.new_state()  # scores 0 0, player 0 to move
    output, (node,) = model.decision_fn([state], np.array([0]))  # roll the coin
    probabilities = np.exp(output.chance_logits[0])
    np.testing.assert_allclose(probabilities, [0.5, 0.5], rtol=1e-6)
    tails, heads = game.apply_chance(node.state, 0), game.apply_chance(node.state, 1)
    _, values = model.evaluate(np.stack([game.observation(tails), game.observation(heads)]))
    # tails passes the turn (the opponent's value, negated); heads keeps it
    np.testing.assert_allclose(output.value[0], 0.5 * -values[0] + 0.5 * values[1], rtol=1e-5)
    calls = model.network_calls
    step, (child,) = model.chance_fn([node], np.array([0]))
    assert model.network_calls == calls  # the outcome was evaluated with the afterstate
    assert step.discount[0] == -1.0 and str(child) == str(tails)
    np.testing.assert_allclose(step.value[0], values[0], rtol=1e-6)


def test_a_winning_stop_is_worth_its_reward_and_ends_the_game():
    game, model = piglet_model()
    state = game.new_state()
    for _ in range(9):  # nine heads in a row: turn total 9
        state = game.apply_chance(game.apply_decision(state, 0).state, 1)
    output, nodes = model.decision_fn([state], np.array([0]))  # roll again: 0.5 of 10
    state = game.apply_chance(nodes[0].state, 1)  # heads: 10, stopping wins
    assert game.legal_mask(state).tolist() == [False, True]
    output, nodes = model.decision_fn([state], np.array([1]))
    assert output.value[0] == pytest.approx(1.0)  # certain: one code
    assert (output.chance_logits[0] > -1e8).sum() == 1
    step, _ = model.chance_fn(nodes, np.array([0]))
    assert step.reward[0] == 1.0 and step.discount[0] == 0.0


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
def test_the_true_chance_model_drives_both_stochastic_searches(policy):
    game, model = piglet_model()
    rng = np.random.default_rng(0)
    states = [game.new_state()]
    for _ in range(5):
        states.append(game.apply(states[-1], int(rng.integers(0, 2)), rng).state)
    states = [s for s in states if not s.is_terminal()]
    obs = np.stack([game.observation(s) for s in states])
    legal = np.stack([game.legal_mask(s) for s in states])
    settings = search.SearchSettings(policy=policy, num_simulations=24)
    output = search.run(
        model.search_root(states, obs), model.recurrent_fn, settings, legal_mask=legal, keys=0
    )
    assert output.visit_counts.sum(1).tolist() == [24] * len(states)
    assert legal[np.arange(len(states)), output.action].all()


@pytest.mark.parametrize("torso", ["conv", "lines"])
def test_a_board_torso_needs_a_board(torso):
    with pytest.raises(ValueError, match=rf"torso={torso} needs \[C, H, W\]"):
        StochasticMuZeroNet((4,), 2, num_codes=8, settings=ModelConfig(torso=torso))


@pytest.mark.parametrize("algo", ["stochastic_muzero", "chance_alphazero"])
def test_hyper_backgammon_trains_and_is_scored_against_a_random_player(tiny_config, tmp_path, algo):
    from mbrl.evaluate import EvalCommandConfig, evaluate

    overrides = [f"run_dir={tmp_path}", "game=hyper_backgammon", f"algo={algo}"]
    train(tiny_config(*overrides, "trainer.max_steps=20", "eval.every=20", "eval.games=4"))
    score = scalars(tmp_path, "eval/score_vs_random")
    assert len(score) == 1 and -1.0 <= score[0] <= 1.0
    report = evaluate(EvalCommandConfig(checkpoint=str(tmp_path), games=4, seed=0))
    assert report["score_vs_random"] == pytest.approx(score[0])  # the run's seed and games


def test_the_true_chance_agent_mixes_the_moves_q_into_its_n_step_targets(tiny_config, tmp_path):
    import lightning as L

    from mbrl.train import build

    batches, replays = {}, {}
    for weight in (0.0, 0.5):
        run_dir = tmp_path / str(weight)
        cfg = tiny_config(
            f"run_dir={run_dir}",
            "game=piglet",
            "algo=chance_alphazero",
            f"algo.search_value_weight={weight}",
        )
        L.seed_everything(0, verbose=False)  # as train() does: the same network, the same games
        _, data, _ = build(cfg, run_dir)
        batches[weight] = {k: v.numpy() for k, v in data.next_batch().items()}
        replays[weight] = data.replay
    plain, mixed = batches[0.0], batches[0.5]
    np.testing.assert_array_equal(plain["indices"], mixed["indices"])  # the same self-play
    replay = replays[0.5]
    move_value = replay.move_value[mixed["indices"] % replay.capacity]
    expected = 0.5 * plain["value"][:, 0] + 0.5 * move_value
    np.testing.assert_allclose(mixed["value"][:, 0], expected, atol=1e-6)
    assert np.abs(move_value - plain["value"][:, 0]).max() > 0.01  # the mixing shows


def test_a_learned_model_refuses_the_search_value_weight(tiny_config, tmp_path):
    with pytest.raises(ValueError, match=r"search_value_weight=0.5 .*algo=muzero unrolls"):
        train(tiny_config(f"run_dir={tmp_path}", "algo=muzero", "algo.search_value_weight=0.5"))
