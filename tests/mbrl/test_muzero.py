"""The learned-model pieces: scalar support, networks, the unroll loss, the latent search model,
and MuZero / Gumbel MuZero / EfficientZero end to end on CartPole, tic-tac-toe and Atari."""

import numpy as np
import pytest
import torch

import search
from mbrl.checkpoint import load_checkpoint
from mbrl.config import AlgoConfig, ModelConfig
from mbrl.networks.muzero import MuZeroNet
from mbrl.networks.support import ScalarSupport, inverse_scalar_transform, scalar_transform
from mbrl.objectives import MuZeroObjective
from mbrl.selfplay.latent_model import LatentModel
from mbrl.train import train
from tests.mbrl.test_train import scalars

TINY = dict(
    channels=8,
    blocks=1,
    latent_dim=8,
    head_hidden=8,
    support_size=10,
    reward_support_size=5,
    lstm_hidden=8,
    projection_dim=8,
    projection_hidden=8,
)


def test_scalar_transform_is_inverted_exactly():
    x = torch.tensor([-1e4, -37.5, -1.0, -1e-3, 0.0, 0.5, 1.0, 475.0, 1e5], dtype=torch.float64)
    torch.testing.assert_close(inverse_scalar_transform(scalar_transform(x)), x)


def test_two_hot_support_keeps_the_expectation_and_round_trips():
    support = ScalarSupport(20)
    x = torch.tensor([-300.0, -2.5, 0.0, 0.7, 13.0, 250.0])
    dist = support.to_distribution(x)
    assert dist.shape == (6, 41) and torch.allclose(dist.sum(-1), torch.ones(6))
    assert ((dist > 0).sum(-1) <= 2).all()
    expected = (dist * support.atoms(dist)).sum(-1)
    torch.testing.assert_close(expected, scalar_transform(x))
    torch.testing.assert_close(
        support.to_scalar(dist.clamp_min(1e-30).log()), x, rtol=1e-4, atol=1e-3
    )
    # Beyond the support's range the target saturates at its edge.
    assert support.to_distribution(torch.tensor([1e9]))[0, -1] == 1


@pytest.mark.parametrize(
    "obs_shape, actions, extra",
    [
        ((4,), 2, {}),
        ((3, 3, 3), 9, {}),
        ((3, 3, 3), 9, {"torso": "mlp"}),
        ((10, 4, 4), 4, {"torso": "lines"}),
        ((2, 6, 7), 7, {"value_prefix": True}),
        ((12, 96, 96), 6, {"downsample": True}),
    ],
)
def test_networks_have_muzero_shapes_and_normalised_latents(obs_shape, actions, extra):
    model = {k: v for k, v in extra.items() if k != "value_prefix"}
    value_prefix = extra.get("value_prefix", False)
    net = MuZeroNet(obs_shape, actions, ModelConfig(**TINY, **model), value_prefix=value_prefix)
    net = net.eval()
    dtype = torch.uint8 if extra.get("downsample") else torch.float32
    obs = (
        torch.randint(0, 255, (3, *obs_shape)).to(dtype)
        if dtype == torch.uint8
        else torch.rand(3, *obs_shape)
    )
    latent = net.represent(obs)
    if extra.get("downsample"):
        assert latent.shape == (3, 8, 6, 6)  # EfficientZero: 96x96 -> 6x6
    flat = latent.flatten(1)
    assert torch.allclose(flat.min(1).values, torch.zeros(3)) and torch.allclose(
        flat.max(1).values, torch.ones(3)
    )
    logits, value = net.predict(latent)
    assert logits.shape == (3, actions) and value.shape == (3, 21)
    following, reward, lstm = net.dynamics(latent, torch.tensor([0, 1, actions - 1]))
    assert following.shape == latent.shape and reward.shape == (3, 11)
    assert (lstm is not None) == bool(extra.get("value_prefix"))
    assert net.project(latent, with_head=True).shape == (3, 8)


def test_a_board_can_take_the_mlp_torso_but_a_vector_not_the_conv_one():
    net = MuZeroNet((3, 3, 3), 9, ModelConfig(**TINY, torso="mlp"))
    assert net.torso == "mlp" and net.represent(torch.rand(2, 3, 3, 3)).shape == (
        2,
        TINY["latent_dim"],
    )
    with pytest.raises(ValueError, match=r"torso=conv needs \[C, H, W\]"):
        MuZeroNet((4,), 2, ModelConfig(**TINY, torso="conv"))
    with pytest.raises(ValueError, match=r"torso=lines needs \[C, H, W\]"):
        MuZeroNet((4,), 2, ModelConfig(**TINY, torso="lines"))
    with pytest.raises(ValueError, match=r"torso=lines needs a square board.*got 6x7"):
        MuZeroNet((2, 6, 7), 7, ModelConfig(**TINY, torso="lines"))
    with pytest.raises(ValueError, match=r"model\.torso must be one of"):
        ModelConfig(**TINY, torso="transformer")


def test_onehot_action_planes_need_enough_cells():
    with pytest.raises(ValueError, match=r"at most 9 actions.*use scalar"):
        MuZeroNet((3, 3, 3), 10, ModelConfig(**TINY, action_encoding="onehot"))


def unroll_batch(k=3, batch=32, actions=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.rand(batch, 4, generator=g),
        "future_obs": torch.rand(batch, k, 4, generator=g),
        "legal": torch.ones(batch, actions, dtype=torch.bool),
        "actions": torch.randint(0, actions, (batch, k), generator=g),
        "policy": torch.softmax(torch.randn(batch, k + 1, actions, generator=g), -1),
        "reward": torch.randn(batch, k + 1, generator=g),
        "value": 5 * torch.randn(batch, k + 1, generator=g),
        "policy_mask": torch.ones(batch, k + 1),
        "value_mask": torch.ones(batch, k + 1),
        "reward_mask": torch.ones(batch, k + 1),
        "weights": torch.ones(batch),
    }


@pytest.mark.parametrize("efficientzero", [False, True])
def test_the_unroll_loss_falls_when_fitting_a_batch(efficientzero):
    torch.manual_seed(0)
    settings = ModelConfig(**TINY)
    net = MuZeroNet((4,), 2, settings, value_prefix=efficientzero)
    objective = MuZeroObjective(
        AlgoConfig(
            unroll_steps=3,
            consistency_weight=2.0 if efficientzero else 0.0,
            value_prefix_horizon=2 if efficientzero else 0,
        )
    )
    batch = unroll_batch()
    optimizer = torch.optim.Adam(net.parameters(), 3e-3)
    losses = []
    for _ in range(60):
        output = objective(net, batch)
        optimizer.zero_grad()
        output.loss.backward()
        optimizer.step()
        losses.append(output.loss.item())
    assert losses[-1] < 0.7 * losses[0]
    assert output.per_sample.shape == (32,) and set(output.metrics) >= {
        "policy_loss",
        "value_loss",
        "reward_loss",
    }
    assert ("consistency_loss" in output.metrics) == efficientzero


def test_value_prefix_targets_sum_rewards_since_each_reset():
    objective = MuZeroObjective(AlgoConfig(unroll_steps=5, value_prefix_horizon=2))
    rewards = torch.tensor([[0.0, 1, 2, 3, 4, 5]])
    # Resets before steps 1, 3, 5 (the parent's depth is a multiple of the horizon).
    assert objective._reward_targets(rewards).tolist() == [[0, 1, 3, 3, 7, 5]]


def test_latent_model_drives_both_searches_with_value_prefix_resets():
    torch.manual_seed(0)
    net = MuZeroNet((4,), 2, ModelConfig(**TINY), value_prefix=True).eval()
    model = LatentModel(net, discount=0.997, two_player=False, value_prefix_horizon=2)
    obs = np.random.default_rng(0).random((5, 4), dtype=np.float32)
    root = model.root(obs)
    resets = []

    def recurrent_fn(embedding, action, is_reset):
        resets.append(is_reset.copy())
        step, new = model.recurrent_fn(embedding, action, is_reset)
        assert torch.all(new[1][torch.from_numpy(is_reset)] == 0)  # LSTM state zeroed
        return step, new

    out = search.muzero_policy(
        root, recurrent_fn, num_simulations=8, value_prefix_horizon=2, seed=1
    )
    assert out.visit_counts.sum(1).tolist() == [8] * 5
    assert np.concatenate(resets).any()
    gumbel = search.gumbel_muzero_policy(
        root, recurrent_fn, num_simulations=8, value_prefix_horizon=2
    )
    assert np.allclose(gumbel.action_weights.sum(1), 1)
    with pytest.raises(ValueError, match="must agree"):
        LatentModel(net, discount=0.997, two_player=False, value_prefix_horizon=0)


@pytest.mark.parametrize("algo", ["muzero", "gumbel_muzero", "efficientzero"])
def test_each_algorithm_trains_on_cartpole_checkpoints_and_resumes(tiny_config, tmp_path, algo):
    overrides = [
        f"run_dir={tmp_path}",
        "game=cartpole",
        f"algo={algo}",
        "trainer.log_every=4",
        "optim.lr=0.01",
        "eval.games=2",
    ]
    summary = train(tiny_config(*overrides, "trainer.max_steps=200", "trainer.checkpoint_every=50"))
    assert summary["steps"] == 200
    losses = scalars(tmp_path, "train/loss")
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3, losses
    assert scalars(tmp_path, "eval/return_mean")[-1] > 0
    checkpoint = load_checkpoint(tmp_path)
    data = checkpoint["SelfPlayDataModule"]
    assert data["gradient_steps"] == 200 and data["replay"]["total_added"] > 0
    assert checkpoint["mbrl"]["algo"] == algo
    resumed = train(tiny_config(*overrides, "trainer.max_steps=210", "trainer.checkpoint_every=50"))
    assert resumed["resumed_from"] and resumed["steps"] == 210
    assert load_checkpoint(tmp_path)["SelfPlayDataModule"]["gradient_steps"] == 210


def test_muzero_plays_tic_tac_toe_with_a_learned_model(tiny_config, tmp_path):
    summary = train(
        tiny_config(
            f"run_dir={tmp_path}", "algo=muzero", "eval.opponents=[random]", "trainer.max_steps=10"
        )
    )
    assert summary["steps"] == 10
    record = [line for line in (tmp_path / "eval.jsonl").read_text().splitlines()][-1]
    assert '"random"' in record


@pytest.mark.parametrize("algo", ["muzero", "gumbel_muzero", "efficientzero"])
def test_each_algorithm_trains_on_atari_pong_and_resumes(tiny_config, tmp_path, algo):
    overrides = [
        f"run_dir={tmp_path}",
        "game=atari",
        "game.name=pong",
        f"algo={algo}",
        "model.downsample=true",
        "trainer.num_games=2",
        "trainer.batch_size=8",
        "trainer.warmup_moves=32",
        "trainer.replay_ratio=1.0",
        "trainer.log_every=5",
        "trainer.checkpoint_every=50",
        "optim.lr=0.01",
        "eval.games=1",
        "eval.simulations=0",
        "game.atari.max_episode_frames=400",
        "replay.capacity=2000",
    ]
    summary = train(tiny_config(*overrides, "trainer.max_steps=100"))
    assert summary["steps"] == 100
    losses = scalars(tmp_path, "train/loss")
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3, losses
    checkpoint = load_checkpoint(tmp_path)
    replay = checkpoint["SelfPlayDataModule"]["replay"]
    assert replay["arrays"]["frames"].dtype == torch.uint8
    assert tuple(replay["arrays"]["frames"].shape[1:]) == (3, 96, 96)  # newest frame only
    assert checkpoint["mbrl"]["game"]["obs_shape"] == [12, 96, 96]
    resumed = train(tiny_config(*overrides, "trainer.max_steps=105"))
    assert resumed["resumed_from"] and resumed["steps"] == 105


def test_an_exploding_loss_stops_the_run_naming_step_term_and_checkpoint(tiny_config, tmp_path):
    cfg = tiny_config(
        f"run_dir={tmp_path}", "game=cartpole", "algo=muzero", "optim.loss_limit=1e-3"
    )
    with pytest.raises(
        FloatingPointError, match=r"step 0: .*offending term: \w+_loss.*none written"
    ):
        train(cfg)
    assert not (tmp_path / "checkpoints" / "last.ckpt").exists()


def test_a_nan_loss_names_the_nan_term():
    from mbrl.config import OptimConfig
    from mbrl.losses import LossOutput
    from mbrl.system import System

    def objective(network, batch):
        nan = torch.tensor(float("nan"))
        return LossOutput(
            nan, torch.zeros(1), {"policy_loss": torch.tensor(1.0), "value_loss": nan}
        )

    system = System(torch.nn.Linear(1, 1), objective, OptimConfig())
    with pytest.raises(FloatingPointError, match="offending term: value_loss"):
        system._check_loss(torch.tensor(float("nan")), objective(None, None).metrics)


def test_eval_and_play_commands_take_learned_model_checkpoints(tiny_config, tmp_path):
    from mbrl.evaluate import EvalCommandConfig, evaluate
    from mbrl.loading import load_agent
    from mbrl.play import PlayConfig, play

    run = tmp_path / "cartpole"
    train(
        tiny_config(f"run_dir={run}", "game=cartpole", "algo=gumbel_muzero", "trainer.max_steps=4")
    )
    report = evaluate(EvalCommandConfig(checkpoint=str(run), games=3, parallel=2, simulations=2))
    assert report["episodes"] == 3 and len(report["returns"]) == 3 and report["return_mean"] > 0
    assert (run / "eval_results.json").exists()
    with pytest.raises(ValueError, match=r"single-agent environment.*mbrl-eval"):
        play(PlayConfig(checkpoint=str(run)), ask=lambda _: "quit", say=lambda _: None)
    board = tmp_path / "ttt"
    train(tiny_config(f"run_dir={board}", "algo=muzero", "trainer.max_steps=4"))
    report = evaluate(EvalCommandConfig(checkpoint=str(board), opponents=["random"], games=4))
    assert report["results"]["random"]["games"] == 4
    from games import BoardGame

    with pytest.raises(
        ValueError, match=r"trained for game tic_tac_toe.*obs \[3, 3, 3\].*not for connect_four"
    ):
        load_agent(board, game=BoardGame("connect_four"))


def test_every_unroll_step_and_head_gets_gradient():
    """Each loss term reaches the parameters it should: a detached term would silently stop
    that head from learning (the root policy once did)."""
    torch.manual_seed(0)
    net = MuZeroNet((4,), 2, ModelConfig(**TINY), value_prefix=True)
    batch = unroll_batch(k=2)
    for term in ("policy", "value", "reward", "consistency"):
        weights = dict(
            policy_weight=0.0, value_weight=0.0, reward_weight=0.0, consistency_weight=0.0
        )
        weights[f"{term}_weight"] = 1.0
        net.zero_grad()
        algo = AlgoConfig(unroll_steps=2, value_prefix_horizon=2, **weights)
        MuZeroObjective(algo)(net, batch).loss.backward()
        head = {
            "policy": net.policy_head,
            "value": net.value_head,
            "reward": net.reward_head,
            "consistency": net.projection_head,
        }[term]
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in head.parameters()), term
    # The root step alone (K = 0) trains the policy head too.
    net.zero_grad()
    k0 = {
        k: v[:, :1] if v.dim() > 1 and k != "obs" and k != "legal" else v for k, v in batch.items()
    }
    k0["actions"] = batch["actions"][:, :0]
    MuZeroObjective(AlgoConfig(unroll_steps=0, value_weight=0.0))(net, k0).loss.backward()
    assert net.policy_head[-1].weight.grad.abs().sum() > 0
