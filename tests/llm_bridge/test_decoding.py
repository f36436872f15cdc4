"""Every decoding method: rewards agree with the verifier, passes are counted, search returns
prefix-consistent policy targets, and bad input names the choices."""

import numpy as np
import pytest

from llm_bridge.decoding import METHODS, decode
from llm_bridge.rounds import distill_examples


@pytest.fixture
def items(countdown):
    return countdown.test[:6]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_decodes_every_prompt_and_its_rewards_are_the_verifiers(env, items, method):
    decoded = decode(env, items, method, budget=3, seed=1)
    assert len(decoded.completions) == len(items)
    for item, completion, reward in zip(items, decoded.completions, decoded.rewards, strict=True):
        assert reward == env.task.reward(item, completion)
    assert decoded.forward_passes > 0
    if method in ("mcts", "gumbel"):
        assert all(decoded.targets)


def test_greedy_is_deterministic_and_spends_one_pass_per_decision(env, items):
    a = decode(env, items, "greedy")
    b = decode(env, items, "greedy")
    assert a.completions == b.completions
    # The roots plus one pass per non-final decision: never more than one per character.
    assert len(items) < a.forward_passes <= sum(len(c) + 1 for c in a.completions)


def test_best_of_n_never_scores_below_a_single_sample_of_its_own(env, items):
    one = decode(env, items, "sample", seed=3)
    many = decode(env, items, "best_of_n", budget=8, seed=3)
    assert (many.rewards >= one.rewards).all()  # its first sample is that one sample
    assert many.forward_passes > one.forward_passes


def test_search_targets_are_distributions_on_prefixes_of_the_completion(env, items):
    decoded = decode(env, items, "mcts", budget=8)
    for ids, targets in zip(decoded.ids, decoded.targets, strict=True):
        for target in targets:
            assert tuple(ids[: len(target.ids)]) == target.ids
            assert np.isclose(target.policy.sum(), 1.0, atol=1e-5)
            assert (target.policy[target.candidates < 0] == 0).all()
    examples = distill_examples(env, items, decoded)
    completions = [e for e in examples if tuple(e.ids) in set(decoded.ids)]
    assert [e.value for e in completions] == list(decoded.rewards)
    assert all(e.value == 1.0 for e in examples if tuple(e.ids) not in set(decoded.ids))


def test_search_with_the_verifier_beats_greedy_on_a_random_model(env, countdown):
    items = countdown.test[:6]
    greedy = decode(env, items, "greedy")
    searched = decode(env, items, "mcts", budget=64)
    assert searched.accuracy > greedy.accuracy


def test_an_unknown_method_lists_the_accepted_ones(env, items):
    with pytest.raises(ValueError, match=r"'viterbi'.*greedy.*gumbel"):
        decode(env, items, "viterbi")


def test_an_unknown_task_lists_the_accepted_ones():
    from llm_bridge.tasks.text_tasks import make_task

    with pytest.raises(ValueError, match=r"'countdown23'.*countdown24.*countdown_general"):
        make_task("countdown23")


def test_tree_targets_add_visited_interior_nodes(env, items):
    from llm_bridge.decoding import TreeSearchSettings

    plain = decode(env, items, "mcts", budget=8)
    settings = TreeSearchSettings(tree_target_visits=2)
    wide = decode(env, items, "mcts", budget=8, settings=settings)
    assert wide.completions == plain.completions  # the same search, more targets read from it
    assert sum(map(len, wide.targets)) > sum(map(len, plain.targets))
    examples = distill_examples(env, items, wide)
    off_path = [e for e in examples if tuple(e.ids) not in set(wide.ids)]
    assert off_path and all(np.isclose(sum(e.policy[0]), 1.0) for e in off_path)
    # A visited node has no value target; only a verified branch's prefix has one (1).
    assert all(np.isnan(e.value) or e.value == 1.0 for e in off_path)
