"""`HFAdapter`: cached extension (and MCTS decoding through it) equals recompute; loading errors
name what is missing."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from llm_bridge.decoding import decode  # noqa: E402
from llm_bridge.hf_adapter import VALUE_HEAD_FILE, HFAdapter  # noqa: E402
from llm_bridge.tasks.text_tasks import CountdownTask  # noqa: E402
from llm_bridge.text_env import TextEnv  # noqa: E402

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def model_directory(tmp_path_factory):
    """A tiny random GPT-2 with a value head, saved as a Hugging Face directory."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=32, vocab_size=64, n_positions=64, eos_token_id=2
    )
    model = transformers.GPT2LMHeadModel(config)
    directory = tmp_path_factory.mktemp("gpt2")
    HFAdapter(model, value_head=torch.nn.Linear(32, 1)).save(directory)
    return directory


@pytest.fixture(scope="module")
def cached(model_directory):
    return HFAdapter.from_directory(model_directory)


@pytest.fixture(scope="module")
def recompute(model_directory):
    return HFAdapter.from_directory(model_directory, use_cache=False)


def assert_same_output(output, reference):
    assert output.logits.dtype == torch.float32 and output.value.dtype == torch.float32
    torch.testing.assert_close(output.logits, reference.logits, atol=TOLERANCE, rtol=0)
    torch.testing.assert_close(output.value, reference.value, atol=TOLERANCE, rtol=0)
    assert torch.equal(output.logits.argmax(-1), reference.logits.argmax(-1))


PROMPTS = [[5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [3]]


def test_from_directory_reads_config(cached):
    assert (cached.vocab_size, cached.eos_id, cached.max_length) == (64, 2, 64)
    assert cached.value_head is not None and cached.tokenizer is None


def test_start_equals_recompute(cached, recompute):
    states, output = cached.start(PROMPTS)
    assert [state.ids for state in states] == [tuple(prompt) for prompt in PROMPTS]
    assert output.logits.shape == (3, 64) and output.value.shape == (3,)
    assert_same_output(output, recompute.evaluate(PROMPTS))
    assert ((output.value > 0) & (output.value < 1)).all()


def test_extend_siblings_multi_token_and_mixed_lengths_equal_recompute(cached, recompute):
    roots, _ = cached.start(PROMPTS)
    # Two siblings of root 0 (one and two tokens), a three-token child of the longest root and
    # a child of the one-token root: parents of lengths 3, 3, 7 and 1 in one forward.
    parents = [roots[0], roots[0], roots[1], roots[2]]
    tokens = [[1], [2, 3], [4, 5, 6], [7]]
    children, output = cached.extend(parents, tokens)
    expected_ids = [p.ids + tuple(t) for p, t in zip(parents, tokens, strict=True)]
    assert [child.ids for child in children] == expected_ids
    assert_same_output(output, recompute.evaluate(expected_ids))


def test_grandchildren_equal_recompute(cached, recompute):
    roots, _ = cached.start(PROMPTS)
    children, _ = cached.extend([roots[0], roots[0], roots[1]], [[1], [2, 3], [4]])
    grandchildren, output = cached.extend(
        [children[1], children[0], roots[2], children[2]], [[9], [10, 11], [12], [13, 14, 15]]
    )
    assert_same_output(output, recompute.evaluate([g.ids for g in grandchildren]))
    deeper, output = cached.extend([grandchildren[0], grandchildren[3]], [[20], [21]])
    assert_same_output(output, recompute.evaluate([d.ids for d in deeper]))


def test_extend_leaves_parent_cache_unchanged(cached):
    (root,), _ = cached.start([PROMPTS[1]])
    prompt_kv, completion_kv = root.cache.prompt.clone(), root.cache.completion.clone()
    _, first = cached.extend([root], [[4, 5]])
    cached.extend([root, root], [[30], [31, 32, 33]])
    _, again = cached.extend([root], [[4, 5]])
    assert torch.equal(first.logits, again.logits) and torch.equal(first.value, again.value)
    assert torch.equal(root.cache.prompt, prompt_kv)
    assert torch.equal(root.cache.completion, completion_kv)


def test_recompute_mode_matches_base_class(recompute):
    roots, _ = recompute.start(PROMPTS)
    assert all(root.cache is None for root in roots)
    children, output = recompute.extend(roots[:2], [[1], [2, 3]])
    assert_same_output(output, recompute.evaluate([child.ids for child in children]))


@pytest.mark.parametrize("use_cache", [True, False])
def test_forward_passes_count_one_per_row(model_directory, use_cache):
    adapter = HFAdapter.from_directory(model_directory, use_cache=use_cache)
    roots, _ = adapter.start(PROMPTS)
    assert adapter.forward_passes == 3
    adapter.extend([roots[0], roots[0]], [[1], [2, 3]])
    assert adapter.forward_passes == 5


def test_without_value_head_value_is_zero(model_directory):
    adapter = HFAdapter.from_directory(model_directory, value_head=False)
    roots, output = adapter.start(PROMPTS)
    assert torch.equal(output.value, torch.zeros(3))
    assert torch.equal(adapter.extend(roots, [[1]] * 3)[1].value, torch.zeros(3))


def test_value_head_loads_from_directory(model_directory, cached):
    assert (model_directory / VALUE_HEAD_FILE).is_file()
    other = HFAdapter.from_directory(model_directory)
    torch.testing.assert_close(other.value_head.weight, cached.value_head.weight)


def test_missing_config_error_names_file_and_directory(model_directory, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(
        (model_directory / "model.safetensors").read_bytes()
    )
    with pytest.raises(FileNotFoundError, match=r"config\.json") as error:
        HFAdapter.from_directory(tmp_path)
    assert str(tmp_path) in str(error.value)


def test_missing_weights_error_names_files_and_directory(model_directory, tmp_path):
    (tmp_path / "config.json").write_text((model_directory / "config.json").read_text())
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors.*pytorch_model\.bin") as error:
        HFAdapter.from_directory(tmp_path)
    assert str(tmp_path) in str(error.value) and "config.json" not in str(error.value)


def test_missing_directory_error_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        HFAdapter.from_directory(tmp_path / "absent")


def test_prompt_overflow_errors_by_default(model_directory):
    adapter = HFAdapter.from_directory(model_directory, max_length=8)
    with pytest.raises(ValueError, match="exceeds the model's context of 8"):
        adapter.start([list(range(3, 13))])


def test_prompt_overflow_truncate_left_keeps_last_tokens(model_directory, recompute):
    adapter = HFAdapter.from_directory(model_directory, max_length=8, overflow="truncate_left")
    (root,), output = adapter.start([list(range(3, 13))])
    assert root.ids == tuple(range(5, 13))
    assert_same_output(output, recompute.evaluate([root.ids]))


def test_child_beyond_context_errors(model_directory):
    adapter = HFAdapter.from_directory(model_directory, max_length=8)
    (root,), _ = adapter.start([list(range(3, 10))])
    adapter.extend([root], [[1]])
    with pytest.raises(ValueError, match=r"child of 9 tokens .* context of 8"):
        adapter.extend([root], [[1, 2]])


def test_max_length_beyond_model_context_errors(model_directory):
    with pytest.raises(ValueError, match="context of 64, got 65"):
        HFAdapter.from_directory(model_directory, max_length=65)


def test_release_frees_caches_and_released_parent_errors(cached):
    roots, _ = cached.start(PROMPTS)
    children, _ = cached.extend(roots, [[1]] * 3)
    cached.release(roots)
    assert all(root.cache is None for root in roots)
    assert all(child.cache is not None for child in children)  # children keep the shared prompt
    cached.extend(children, [[2]] * 3)
    with pytest.raises(ValueError, match="no KV cache"):
        cached.extend([roots[0]], [[1]])


def test_extend_rejects_empty_extension(cached):
    (root,), _ = cached.start([PROMPTS[0]])
    with pytest.raises(ValueError, match="at least one new token"):
        cached.extend([root], [[]])


@pytest.mark.parametrize("use_cache", [True, False])
def test_empty_batches_give_empty_outputs(model_directory, use_cache):
    adapter = HFAdapter.from_directory(model_directory, use_cache=use_cache)
    states, output = adapter.start([])
    assert states == [] and output.logits.shape == (0, 64) and output.value.shape == (0,)
    children, output = adapter.extend([], [])
    assert children == [] and output.logits.shape == (0, 64)
    assert adapter.forward_passes == 0


def test_token_ids_outside_vocabulary_error(cached):
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 64\), got 3..64"):
        cached.start([[3, 64]])
    (root,), _ = cached.start([PROMPTS[0]])
    with pytest.raises(ValueError, match=r"got -1..-1"):
        cached.extend([root], [[-1]])


def test_mcts_decoding_same_with_and_without_cache(tmp_path, countdown, tokenizer):
    """Real search decoding (Countdown, 2-shot prompts sharing a long prefix): the cache changes
    neither the completions nor the forward passes spent."""
    torch.manual_seed(0)
    # Reads CharTokenizer ids (23 < 32) directly; a 2-shot prompt + 40 new tokens fit in 128.
    config = transformers.GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=32,
        vocab_size=32,
        n_positions=128,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.GPT2LMHeadModel(config)
    HFAdapter(model, value_head=torch.nn.Linear(32, 1)).save(tmp_path)
    task, puzzles = CountdownTask(grammar=True, few_shot=2), countdown.test[:2]
    decoded = {}
    for use_cache in (True, False):
        adapter = HFAdapter.from_directory(tmp_path, use_cache=use_cache)
        env = TextEnv(adapter, tokenizer, task, width=4, max_new_tokens=40)
        decoded[use_cache] = decode(env, puzzles, "mcts", budget=4)
    cached, recomputed = decoded[True], decoded[False]
    assert cached.completions == recomputed.completions and all(cached.completions)
    assert cached.ids == recomputed.ids
    assert cached.forward_passes == recomputed.forward_passes > len(puzzles)


def test_scoring_continuations_equals_stepwise_evaluation(recompute):
    from tests.llm_bridge.test_models import assert_score_matches_stepwise_evaluation

    assert_score_matches_stepwise_evaluation(recompute, [[3, 4], [5, 6, 7, 8]], [[9, 10, 11], [12]])
