"""`TransformerAdapter(use_cache=True)`: the TinyLM's keys and values kept along the tree's
branches give recompute's outputs (to float rounding) and the same decoding, pass for pass."""

from __future__ import annotations

import pytest
import torch

from llm_bridge.decoding import decode
from llm_bridge.kv_cache import KVCache
from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.text_env import TextEnv
from llm_bridge.transformer_adapter import TransformerAdapter

TOLERANCE = 1e-5
PROMPTS = [[5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [3]]


@pytest.fixture
def model(tokenizer):
    torch.manual_seed(0)  # two layers and heads: the cache's layout has both axes
    return TinyLM(TinyLMSettings(tokenizer.vocab_size, context=24, layers=2, heads=2, width=16))


@pytest.fixture
def cached(model, tokenizer):
    return TransformerAdapter(model, eos_id=tokenizer.eos_id, use_cache=True)


@pytest.fixture
def recompute(model, tokenizer):
    return TransformerAdapter(model, eos_id=tokenizer.eos_id)


def assert_same_output(output, reference):
    assert output.logits.dtype == torch.float32 and output.value.dtype == torch.float32
    torch.testing.assert_close(output.logits, reference.logits, atol=TOLERANCE, rtol=0)
    torch.testing.assert_close(output.value, reference.value, atol=TOLERANCE, rtol=0)


def test_start_equals_recompute_and_keeps_each_prompts_cache(cached, recompute):
    states, output = cached.start(PROMPTS)
    assert [state.ids for state in states] == [tuple(prompt) for prompt in PROMPTS]
    assert_same_output(output, recompute.evaluate(PROMPTS))
    for state, prompt in zip(states, PROMPTS, strict=True):
        assert isinstance(state.cache, KVCache)
        assert state.cache.prompt.shape == (2, 2, 2, len(prompt), 8)  # [L, 2, H, T, D]
        assert state.cache.length == len(prompt)


def test_siblings_grandchildren_and_mixed_lengths_equal_recompute(cached, recompute):
    roots, _ = cached.start(PROMPTS)
    # Siblings of one and two tokens, a three-token child of the longest root, a child of the
    # one-token root: parents of lengths 3, 3, 7 and 1 in one forward.
    parents = [roots[0], roots[0], roots[1], roots[2]]
    children, output = cached.extend(parents, [[1], [2, 3], [4, 5, 6], [7]])
    assert_same_output(output, recompute.evaluate([c.ids for c in children]))
    grandchildren, output = cached.extend(
        [children[1], children[0], roots[2], children[2]], [[9], [10, 11], [12], [13, 14, 15]]
    )
    assert_same_output(output, recompute.evaluate([g.ids for g in grandchildren]))
    assert all(g.cache.length == len(g.ids) for g in grandchildren)


def test_extension_leaves_the_parents_cache_unchanged(cached):
    (root,), _ = cached.start([PROMPTS[1]])
    prompt_kv, completion_kv = root.cache.prompt.clone(), root.cache.completion.clone()
    _, first = cached.extend([root], [[4, 5]])
    cached.extend([root, root], [[15], [16, 17, 18]])
    _, again = cached.extend([root], [[4, 5]])
    assert torch.equal(first.logits, again.logits)
    assert torch.equal(root.cache.prompt, prompt_kv)
    assert torch.equal(root.cache.completion, completion_kv)


def test_a_child_past_the_context_falls_back_to_recompute_and_so_do_its_descendants(
    cached, recompute
):
    """Recompute's rules then apply: its overflow setting decides, as without a cache."""
    roots, _ = cached.start([PROMPTS[1]])
    long = [list(range(1, 17))]  # 7 + 16 = 23 of the context's 24
    children, output = cached.extend(roots, long)
    assert isinstance(children[0].cache, KVCache)
    with pytest.raises(ValueError, match="exceeds the model's context of 24"):
        cached.extend(children, [[3, 4]])
    truncating = TransformerAdapter(
        cached.model, eos_id=cached.eos_id, overflow="truncate_left", use_cache=True
    )
    roots, _ = truncating.start([PROMPTS[1]])
    children, _ = truncating.extend(roots, long)
    over, output = truncating.extend(children, [[3, 4]])
    assert over[0].cache is None  # recomputed, from the last 24 tokens
    assert_same_output(output, recompute.evaluate([over[0].ids[-24:]]))
    deeper, output = truncating.extend(over, [[5]])
    assert deeper[0].cache is None
    assert_same_output(output, recompute.evaluate([deeper[0].ids[-24:]]))


def test_passes_count_one_per_row_and_training_mode_is_restored(cached):
    cached.model.train()
    roots, _ = cached.start(PROMPTS)
    cached.extend([roots[0], roots[1]], [[1, 2], [3]])
    assert cached.forward_passes == 5 and cached.model.training


@pytest.mark.parametrize("method", ["mcts", "gumbel", "best_of_n"])
def test_decoding_is_the_same_with_and_without_the_cache(method, tokenizer, countdown):
    """Real decoding of Countdown puzzles: the cache changes neither the completions nor the
    forward passes spent (a 2-layer model, 64-token context, grammar-forced tokens)."""
    torch.manual_seed(1)
    model = TinyLM(TinyLMSettings(tokenizer.vocab_size, context=64, layers=2, heads=2, width=32))
    decoded = {}
    for use_cache in (True, False):
        adapter = TransformerAdapter(model, eos_id=tokenizer.eos_id, use_cache=use_cache)
        env = TextEnv(adapter, tokenizer, countdown.task, width=8, max_new_tokens=40)
        decoded[use_cache] = decode(env, countdown.test[:4], method, budget=8, seed=3)
    cached, recomputed = decoded[True], decoded[False]
    assert cached.completions == recomputed.completions and all(cached.completions)
    assert cached.forward_passes == recomputed.forward_passes > 4
