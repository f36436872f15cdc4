"""REINFORCE's value-only warm-up: the head moves to the round's success rate, the policy does
not move at all, and the option is refused where it means nothing."""

import pytest
import torch

from benchmarks.learning_runs import compose_train
from llm_bridge.baseline_warmup import fit_value_head
from llm_bridge.config import validate_text
from llm_bridge.examples import collate, next_token_example


def _round(successes: int, failures: int):
    """A round's samples: a quarter solved when ``successes, failures = 1, 3``."""
    ids = [[1, 5, 6 + k % 3, 7, 2] for k in range(successes + failures)]
    rewards = [1.0] * successes + [0.0] * failures
    return [
        next_token_example(s, prompt_length=2, value=r) for s, r in zip(ids, rewards, strict=True)
    ]


def test_the_warm_up_calibrates_the_head_and_leaves_the_policy_untouched(tiny_model):
    examples = _round(4, 12) * 4
    batch = collate(examples)
    before = tiny_model(batch["ids"])
    others = {n: p.clone() for n, p in tiny_model.named_parameters() if "value_head" not in n}
    record = fit_value_head(tiny_model, examples, steps=200, batch_size=16, seed=0, lr=0.05)
    after = tiny_model(batch["ids"])
    assert record["warmup_success"] == pytest.approx(0.25)
    assert abs(record["warmup_value_after"] - 0.25) < 0.05
    assert abs(record["warmup_value_before"] - 0.25) > abs(record["warmup_value_after"] - 0.25)
    assert record["warmup_value_loss_after"] < record["warmup_value_loss_before"]
    torch.testing.assert_close(after.logits, before.logits, rtol=0, atol=0)
    for name, parameter in tiny_model.named_parameters():
        if name in others:
            torch.testing.assert_close(parameter, others[name], rtol=0, atol=0)
    assert tiny_model.training  # its mode is given back


def test_no_steps_or_no_outcomes_change_nothing(tiny_model):
    head = tiny_model.value_head.weight.clone()
    assert fit_value_head(tiny_model, _round(1, 1), steps=0, batch_size=4, seed=0) == {}
    unscored = [next_token_example([1, 5, 6, 2], prompt_length=2)]  # value NaN: no outcome
    assert fit_value_head(tiny_model, unscored, steps=5, batch_size=4, seed=0) == {}
    torch.testing.assert_close(tiny_model.value_head.weight, head, rtol=0, atol=0)


@pytest.mark.parametrize(
    "overrides",
    [
        ["experiment=countdown_grpo"],
        ["experiment=countdown_reinforce", "llm.reinforce_baseline=group_mean"],
    ],
)
def test_the_warm_up_is_refused_without_a_value_baseline(overrides):
    cfg = compose_train(*overrides, "llm.baseline_warmup_steps=10")
    with pytest.raises(ValueError, match=r"llm\.baseline_warmup_steps=10 fits REINFORCE's value"):
        validate_text(cfg)
