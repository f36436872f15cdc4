"""The learned reward model: exact labels from the solver, a bidirectional encoder that ignores
padding, and training on the core's System that beats the base rate on held-out puzzles."""

import torch

from llm_bridge.fitting import fit
from llm_bridge.reward_model import (
    RewardModel,
    RewardModelSettings,
    RewardObjective,
    as_examples,
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
