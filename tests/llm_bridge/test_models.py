"""Tokenizer, TinyLM and its adapter."""

import pytest
import torch

from llm_bridge.adapter import LMState
from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.tokenizer import CharTokenizer
from llm_bridge.transformer_adapter import TransformerAdapter


def test_tokenizer_round_trips_and_stops_at_eos():
    tokenizer = CharTokenizer()
    ids = tokenizer.encode("3/4=3|4,1-3|4=1|4")
    assert tokenizer.decode([tokenizer.bos_id, *ids, tokenizer.eos_id, *ids]) == "3/4=3|4,1-3|4=1|4"


def test_tokenizer_names_an_unknown_character():
    with pytest.raises(ValueError, match=r"'x'.*alphabet"):
        CharTokenizer().encode("3x4")


def test_right_padding_does_not_change_real_positions(tiny_model):
    ids = torch.tensor([[1, 5, 6, 7]])
    padded = torch.tensor([[1, 5, 6, 7, 0, 0]])
    a, b = tiny_model(ids), tiny_model(padded)
    assert torch.allclose(a.logits, b.logits[:, :4], atol=1e-5)
    assert torch.allclose(a.value_logit, b.value_logit[:, :4], atol=1e-5)


def test_adapter_reads_the_last_real_position_and_counts_passes(tiny_model, tokenizer):
    adapter = TransformerAdapter(tiny_model, eos_id=tokenizer.eos_id)
    sequences = [[1, 5, 6], [1, 5, 6, 7, 8]]
    output = adapter.evaluate(sequences)
    for row, sequence in enumerate(sequences):
        heads = tiny_model(torch.tensor([sequence]))
        assert torch.allclose(output.logits[row], heads.logits[0, -1], atol=1e-5)
        assert torch.allclose(output.value[row], torch.sigmoid(heads.value_logit[0, -1]), atol=1e-6)
    children, _ = adapter.extend(adapter.start([[1, 5]])[0], [[6, 7]])
    assert children[0].ids == (1, 5, 6, 7)
    assert adapter.forward_passes == 4


def test_a_prompt_longer_than_the_context_is_refused_or_truncated_as_configured(tokenizer):
    model = TinyLM(TinyLMSettings(tokenizer.vocab_size, context=8, layers=1, heads=1, width=8))
    adapter = TransformerAdapter(model, eos_id=tokenizer.eos_id)
    with pytest.raises(
        ValueError, match=r"12 tokens exceeds the model's context of 8.*truncate_left"
    ):
        adapter.start([list(range(3, 15))])
    adapter.overflow = "truncate_left"
    states, _ = adapter.start([list(range(3, 15))])
    assert states[0].ids == tuple(range(7, 15))


def test_settings_reject_a_width_not_divisible_by_heads():
    with pytest.raises(ValueError, match="divisible"):
        TinyLMSettings(vocab_size=10, width=10, heads=4)


def assert_score_matches_stepwise_evaluation(adapter, prefixes, continuations):
    """``score`` = the sum over the continuation of the next-token log-probs ``evaluate`` gives
    one prefix at a time, and its value = ``evaluate``'s value after the continuation."""
    states = [LMState(tuple(p)) for p in prefixes]
    scores = adapter.score(states, continuations)
    for row, (prefix, continuation) in enumerate(zip(prefixes, continuations, strict=True)):
        total, ids = 0.0, list(prefix)
        for token in continuation:
            total += torch.log_softmax(adapter.evaluate([ids]).logits[0], -1)[token].item()
            ids.append(token)
        assert abs(scores.logits[row].item() - total) < 1e-4
        assert abs(scores.value[row].item() - adapter.evaluate([ids]).value[0].item()) < 1e-5


def test_scoring_continuations_equals_stepwise_evaluation(tiny_model, tokenizer):
    adapter = TransformerAdapter(tiny_model, eos_id=tokenizer.eos_id)
    assert_score_matches_stepwise_evaluation(adapter, [[1, 5], [1, 5, 6, 7]], [[8, 9, 2], [4]])
