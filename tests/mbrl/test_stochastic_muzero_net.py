"""Stochastic MuZero's networks: shapes, the straight-through code, and the chance machinery
learning Pig's die from transitions alone (codes that carry the face, sigma their frequency)."""

import numpy as np
import pytest
import torch

from games.chance import ChanceGame
from mbrl.config import ModelConfig
from mbrl.networks.stochastic_muzero import (
    StochasticMuZeroNet,
    chance_distribution_loss,
    commitment_loss,
    straight_through_code,
)

SMALL = ModelConfig(channels=64, blocks=1, latent_dim=32, head_hidden=32, support_size=5,
                    reward_support_size=5)  # fmt: skip


def test_every_function_has_its_shape():
    net = StochasticMuZeroNet((3, 4), num_actions=5, num_codes=7, settings=SMALL)
    obs = torch.rand(8, 3, 4)
    state = net.represent(obs)
    after = net.afterstate(state, torch.arange(8) % 5)
    chance_logits, q_logits = net.predict_afterstate(after)
    code = net.encode_chance(obs, torch.rand(8, 3, 4))
    next_state, reward_logits, turn_logit = net.dynamics(after, code.code)
    policy_logits, value_logits = net.predict(next_state)
    assert state.shape == after.shape == next_state.shape == (8, 32)
    assert chance_logits.shape == (8, 7) and q_logits.shape == value_logits.shape == (8, 11)
    assert reward_logits.shape == (8, 11) and policy_logits.shape == (8, 5)
    assert turn_logit.shape == (8,)
    by_index, _, _ = net.dynamics(after, code.index)  # an index is the same code as its one-hot
    torch.testing.assert_close(by_index, next_state)


def test_the_code_is_one_hot_forward_and_the_softmax_backward():
    logits = torch.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
    code = straight_through_code(logits)
    assert code.code.tolist() == [[1.0, 0.0, 0.0]] and code.index.tolist() == [0]
    (code.code * torch.tensor([[0.0, 1.0, 0.0]])).sum().backward()  # d code_1 / d logits
    probs = torch.softmax(logits.detach(), -1)[0]
    expected = -probs[1] * probs
    expected[1] += probs[1]
    torch.testing.assert_close(logits.grad[0], expected)


def test_the_losses_vanish_when_encoder_and_sigma_agree():
    sure = straight_through_code(torch.tensor([[50.0, 0.0, 0.0]]))
    assert commitment_loss(sure).item() == pytest.approx(0.0, abs=1e-12)
    unsure = straight_through_code(torch.zeros(1, 3))
    assert commitment_loss(unsure).item() == pytest.approx(2 / 3)
    assert chance_distribution_loss(torch.tensor([[50.0, 0.0, 0.0]]), sure).item() < 1e-12


def pig_rolls(count: int, seed: int):
    """``count`` rolls from random Pig positions: (obs, next obs, the die's face 0-5)."""
    game, rng = ChanceGame("pig", {"winscore": 30}), np.random.default_rng(seed)
    obs, next_obs, faces = [], [], []
    while len(faces) < count:
        state = game.new_state()
        for _ in range(int(rng.integers(0, 12))):  # walk to a random position
            if state.is_terminal():
                break
            state = game.apply(state, int(rng.integers(0, 2)), rng).state
        if state.is_terminal() or not game.legal_mask(state)[0]:
            continue
        after = game.apply_decision(state, 0).state  # roll
        face = int(rng.integers(0, 6))
        obs.append(game.observation(state))
        next_obs.append(game.observation(game.apply_chance(after, face)))
        faces.append(face)
    return (torch.tensor(np.array(obs)), torch.tensor(np.array(next_obs)), np.array(faces))


def test_the_chance_codes_learn_pigs_die():
    # The next observation is a function of the position and the face (Pig shows the turn
    # total), so predicting it from the afterstate needs the face: the code must carry it, and
    # sigma must learn how often the encoder picks each code. With 32 codes (the paper's
    # codebook) and 1,000 full-batch steps the codes carry about 1 of the die's 2.58 bits (an
    # untrained encoder carries ~0); telling all six faces apart takes far longer training
    # (3,000 steps: 73% of rolls in a code of their face), the straight-through codes learn slowly.
    # The commitment weight decides whether they learn at all: at 0.25 the encoder's softmax
    # saturates on its first picks and the codes freeze (seeds 0-3: 0.01-0.38 bits); at 0.02
    # they carry 0.76-1.10 bits on every seed (0: 0.81-1.25).
    torch.manual_seed(0)
    obs, next_obs, faces = pig_rolls(1200, seed=0)
    net = StochasticMuZeroNet(obs.shape[1:], num_actions=2, num_codes=32, settings=SMALL)
    decoder = torch.nn.Linear(SMALL.latent_dim, obs.shape[1])
    optimiser = torch.optim.Adam([*net.parameters(), *decoder.parameters()], lr=3e-3)
    roll = torch.zeros(len(obs), dtype=torch.long)
    for _ in range(1000):
        after = net.afterstate(net.represent(obs), roll)
        code = net.encode_chance(obs, next_obs)
        next_state, _, _ = net.dynamics(after, code.code)
        chance_logits, _ = net.predict_afterstate(after.detach())
        loss = (
            (decoder(next_state) - next_obs).pow(2).sum(-1).mean()
            + chance_distribution_loss(chance_logits, code).mean()
            + 0.02 * commitment_loss(code).mean()
        )
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        code = net.encode_chance(obs, next_obs).index.numpy()
        after = net.afterstate(net.represent(obs), roll)
        sigma = torch.softmax(net.predict_afterstate(after)[0], -1).mean(0).numpy()
    joint = np.zeros((32, 6))
    np.add.at(joint, (code, faces), 1 / len(faces))
    outer = joint.sum(1, keepdims=True) * joint.sum(0, keepdims=True)
    bits = np.sum(joint[joint > 0] * np.log2(joint[joint > 0] / outer[joint > 0]))
    assert bits > 0.6, bits  # the codes carry the face
    # sigma: how often each code happens, in total variation. Float rounding moves it (torch's
    # AVX-512 or AVX2 kernels, 1 or 2 threads: 0.026-0.076, measured 2026-12-07); a uniform
    # sigma is 0.59-0.78 away. (The largest single error, 0.017-0.043, was too tight a bound.)
    assert np.abs(sigma - joint.sum(1)).sum() / 2 < 0.15
