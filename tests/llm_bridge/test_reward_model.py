"""The learned reward model: exact labels from the solver, a bidirectional encoder that ignores
padding, and training on the core's System that beats the base rate on held-out puzzles."""

import numpy as np
import pytest
import torch

from llm_bridge.fitting import fit
from llm_bridge.reward_model import (
    RewardEnsemble,
    RewardModel,
    RewardModelSettings,
    RewardObjective,
    as_examples,
    calibrated_threshold,
    classification_report,
    labelled_examples,
)
from llm_bridge.tasks.countdown import Puzzle, reachable, verify
from llm_bridge.tokenizer import CharTokenizer
from mbrl.config import OptimConfig
from mbrl.networks.transformer_block import TransformerBlock
from mbrl.system import System


def test_reachability_is_the_solver_s_answer():
    puzzle = Puzzle((1, 2, 3, 4))
    assert reachable(puzzle, "1+2=3,")  # 3 3 4: (3 + 3) * 4
    assert not reachable(puzzle, "4-3=1,1*1=1,")  # 1 2: at most 3
    assert not reachable(puzzle, "1+1=2,")  # there is one 1: an invalid step
    assert reachable(puzzle, "")


def test_labels_match_the_exact_checkers(countdown):
    tokenizer = CharTokenizer()
    texts = labelled_examples(countdown.train[:20], tokenizer, per_puzzle=4, seed=0)
    assert {t.kind for t in texts} == {"partial", "complete"}
    for text in texts[:60]:
        decoded = tokenizer.decode(text.ids)
        prompt, completion = decoded.split(":", 1)
        numbers, target = prompt.split(">")
        puzzle = Puzzle(tuple(map(int, numbers.split())), int(target))
        if text.kind == "complete":
            assert text.label == verify(puzzle, completion).correct
            assert text.ids[-1] == tokenizer.eos_id
        else:
            assert text.label == reachable(puzzle, completion)
    complete = [t.label for t in texts if t.kind == "complete"]
    assert 0.2 < sum(complete) / len(complete) < 0.8  # the solution-led half gives positives


def test_the_encoder_sees_the_whole_sequence_and_ignores_padding():
    torch.manual_seed(0)
    block = TransformerBlock(16, 2, causal=False).eval()
    x = torch.randn(1, 5, 16)
    changed = x.clone()
    changed[0, 4] = torch.randn(16)  # the last token changes the first position's output
    assert (block(x)[0, 0] - block(changed)[0, 0]).abs().max() > 1e-4
    model = RewardModel(RewardModelSettings(vocab_size=30)).eval()
    ids = torch.tensor([[1, 5, 6, 7, 2]])
    padded = torch.tensor([[1, 5, 6, 7, 2, 0, 0]])
    torch.testing.assert_close(model(ids), model(padded))


def test_a_trained_reward_model_beats_the_base_rate_on_held_out_puzzles(countdown):
    torch.manual_seed(0)
    tokenizer = CharTokenizer()
    train = labelled_examples(countdown.train[:200], tokenizer, per_puzzle=6, seed=0)
    held_out = labelled_examples(countdown.test[:80], tokenizer, per_puzzle=6, seed=1)
    model = RewardModel(RewardModelSettings(tokenizer.vocab_size, layers=2, width=32))
    system = System(model, RewardObjective(), OptimConfig(lr=3e-3))
    fit(system, as_examples(train), steps=150, batch_size=64, seed=0)
    report = classification_report(model, held_out)
    for kind in ("partial", "complete"):
        base_rate = max(report[kind]["positives"], 1 - report[kind]["positives"])
        assert report[kind]["accuracy"] > base_rate + 0.03, (kind, report[kind])


def test_the_calibrated_threshold_is_where_the_judge_is_right_at_that_score():
    # Scores 0..9 (twenty examples each): right 10% of the time at 0-4, 50% at 5-7, 95% at 8-9.
    scores = np.repeat(np.arange(10.0), 20)
    right = {**dict.fromkeys(range(5), 2), **dict.fromkeys(range(5, 8), 10), 8: 19, 9: 19}
    labels = np.concatenate([np.arange(20) < right[s] for s in range(10)])
    assert calibrated_threshold(scores, labels, precision=0.9) == 8.0
    # Everything at or above 5 is right 0.68 of the time: a threshold on that average would be 5.
    assert labels[scores >= 5].mean() == pytest.approx(0.68)
    assert calibrated_threshold(scores, labels, precision=0.5) == 5.0
    assert calibrated_threshold(scores, np.zeros_like(labels), precision=0.9) == 1.0
    # A miss above a hit is pooled with it (the fit is monotone): right half the time from 1.
    assert calibrated_threshold(np.array([1.0, 2, 3]), np.array([1, 0, 1]), 0.5) == 1.0
    assert calibrated_threshold(np.array([1.0, 2, 3]), np.array([1, 0, 1]), 0.6) == 3.0
    with pytest.raises(ValueError, match="precision"):
        calibrated_threshold(scores, labels, precision=0)


def test_an_ensemble_judges_by_its_most_pessimistic_member():
    torch.manual_seed(0)
    members = [RewardModel(RewardModelSettings(vocab_size=30, width=16)) for _ in range(3)]
    sequences = [[1, 5, 6], [1, 7, 8, 9, 2]]
    each = np.stack([m.probability(sequences) for m in members])
    ensemble = RewardEnsemble(members)
    np.testing.assert_allclose(ensemble.probability(sequences), each.min(0))
    assert ensemble.passes_per_sequence == 3 and members[0].passes_per_sequence == 1
    with pytest.raises(ValueError, match="at least one"):
        RewardEnsemble([])
