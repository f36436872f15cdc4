"""REINFORCE with a baseline: the advantage each baseline gives, the direction it moves a
sequence, and the measured gradient variance that shows what a baseline buys."""

import numpy as np
import pytest
import torch

from llm_bridge.decoding import Decoded
from llm_bridge.examples import collate, next_token_example
from llm_bridge.objectives import ReinforceObjective, policy_gradient_variance
from llm_bridge.rounds import reinforce_examples


class _Env:  # the one thing reinforce_examples asks of a TextEnv
    def prompt_ids(self, item):
        return [1, 3]


def _decoded(rewards) -> Decoded:
    ids = [[1, 3, 5 + k % 4, 6, 2] for k in range(len(rewards))]
    return Decoded([""] * len(ids), np.asarray(rewards, np.float32), ids, forward_passes=0)


@pytest.mark.parametrize(
    ("baseline", "advantages"),
    [("group_mean", [0.5, -0.5, 0.0, 0.0]), ("value", [1, 0, 1, 1]), ("none", [1, 0, 1, 1])],
)
def test_examples_carry_the_reward_and_the_baseline_s_advantage(baseline, advantages):
    examples = reinforce_examples(_Env(), ["a", "b"], _decoded([1, 0, 1, 1]), 2, baseline)
    assert [e.value for e in examples] == [1, 0, 1, 1]  # the value head learns the reward
    assert [e.advantage for e in examples] == advantages  # no group is dropped


def test_the_value_baseline_subtracts_the_value_head_at_every_prefix(tiny_model):
    example = next_token_example([1, 5, 6, 7, 2], prompt_length=2, value=1.0, advantage=1.0)
    batch = collate([example])
    heads = tiny_model(batch["ids"])
    log_prob = torch.log_softmax(heads.logits, -1)
    positions = torch.tensor(example.positions)
    picked = log_prob[0, positions, torch.tensor(example.ids)[positions + 1]]
    baseline = torch.sigmoid(heads.value_logit[0, positions])
    expected_policy = -((1.0 - baseline) * picked).mean()
    output = ReinforceObjective(baseline="value", value_weight=0.0)(tiny_model, batch)
    assert torch.isclose(output.loss, expected_policy, atol=1e-6)
    assert torch.isclose(output.metrics["policy_loss"], expected_policy, atol=1e-6)


@pytest.mark.parametrize("reward", [1.0, 0.0])
def test_reinforce_moves_a_sequence_towards_reward_and_away_from_failure(tiny_model, reward):
    example = next_token_example([1, 5, 6, 7, 2], prompt_length=2, value=reward, advantage=reward)
    batch = collate([example])

    def log_prob() -> float:
        with torch.no_grad():
            logits = tiny_model(batch["ids"]).logits[0]
        picked = torch.log_softmax(logits, -1)[torch.arange(4), torch.tensor(example.ids[1:])]
        return picked[example.positions[0] :].sum().item()

    before = log_prob()
    optimizer = torch.optim.SGD(tiny_model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        ReinforceObjective(baseline="value", value_weight=0.0)(tiny_model, batch).loss.backward()
        optimizer.step()
    # reward 1 beats the value head's guess (< 1): up; reward 0 falls short of it: down
    assert (log_prob() - before) * (1 if reward else -1) > 0


def test_gradient_variance_is_the_variance_of_each_sequence_s_logit_gradient(tiny_model):
    examples = [
        next_token_example([1, 5, 6, 7, 2], 2, value=1.0, advantage=1.0),
        next_token_example([1, 5, 8, 2], 2, value=0.0, advantage=-0.5),
        next_token_example([1, 4, 6, 6, 7, 2], 2, value=1.0, advantage=2.0),
    ]
    batch = collate(examples)
    logits = tiny_model(batch["ids"]).logits.detach()
    advantage = batch["advantage"][:, None] * batch["target_mask"]
    measured = policy_gradient_variance(logits, batch, advantage)
    gradients = []  # autograd, one sequence at a time: d loss_i / d logits, summed over t
    for row in range(len(examples)):
        leaf = logits[row : row + 1].clone().requires_grad_(True)
        picked = torch.log_softmax(leaf, -1).gather(-1, batch["candidates"][row : row + 1, :, :1])
        mask = batch["target_mask"][row : row + 1]
        loss = -(advantage[row : row + 1] * picked[..., 0] * mask).sum() / mask.sum()
        loss.backward()
        gradients.append(leaf.grad[0].sum(0))
    stacked = torch.stack(gradients)
    expected = (stacked - stacked.mean(0)).pow(2).sum(1).mean()
    assert torch.isclose(measured, expected, rtol=1e-5)


def test_a_group_mean_baseline_has_less_gradient_variance_than_none_on_the_same_samples(
    tiny_model,
):
    rewards = np.array([1, 1, 1, 0, 1, 1, 0, 1], np.float32)  # mostly solved: R alone is noisy
    decoded = _decoded(rewards)
    variance = {}
    for baseline in ("none", "group_mean"):
        examples = reinforce_examples(_Env(), ["a", "b"], decoded, 4, baseline)
        output = ReinforceObjective(baseline=baseline)(tiny_model, collate(examples))
        variance[baseline] = output.metrics["gradient_variance"].item()
    assert variance["group_mean"] < variance["none"]


def test_an_unknown_baseline_is_refused_by_name():
    with pytest.raises(ValueError, match="'mean'"):
        ReinforceObjective(baseline="mean")
