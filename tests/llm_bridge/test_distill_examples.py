"""Distillation data: every verified completion a search found is a whole sequence, each
decision's target is placed once (averaged over the searches that reached it), repeated
searches of a prompt explore, and distinct searches each look for a new solution. Hand-built decodes pin the layout; real searches check the rest."""

from functools import partial

import numpy as np
import pytest

from llm_bridge.config import LLMConfig, TextTrainConfig
from llm_bridge.decoding import (
    MAX_SEARCHES_FACTOR,
    Decoded,
    SearchTarget,
    TreeSearchSettings,
    decode,
    decode_distinct,
)
from llm_bridge.rounds import distill_examples, search_verified_examples
from llm_bridge.step_env import StepTextEnv
from llm_bridge.train_text import distill_search_settings
from search import SearchSettings

CANDIDATES = np.array([5, 6, -1])


def _target(ids, policy, value=None):
    return SearchTarget(tuple(ids), CANDIDATES, np.array(policy, np.float32), value)


class _Env:  # distill_examples reads only the prompt length
    def prompt_ids(self, item):
        return [1, 2]


def _two_searches() -> Decoded:
    """One item, two searches: the first failed on [1 2 6 9], the second solved on [1 2 5 5 9]
    and its tree also held the solution [1 2 5 6 9]."""
    return Decoded(
        completions=["x", "y"],
        rewards=np.array([0.0, 1.0]),
        ids=[(1, 2, 6, 9), (1, 2, 5, 5, 9)],
        forward_passes=10,
        targets=[
            [_target([1, 2], [0.2, 0.8, 0]), _target([1, 2, 6], [0.5, 0.5, 0])],
            [
                _target([1, 2], [0.6, 0.4, 0]),
                _target([1, 2, 5], [0.5, 0.5, 0], 1.0),
                _target([1, 2, 5, 6], [0, 0, 1], 1.0),  # only on the second solution
            ],
        ],
        solutions=[[], [(1, 2, 5, 5, 9), (1, 2, 5, 6, 9)]],
    )


def test_each_distinct_completion_is_one_sequence_with_its_value():
    examples = distill_examples(_Env(), ["item"], _two_searches(), searches_per_item=2)
    by_ids = {tuple(e.ids): e for e in examples}
    assert set(by_ids) == {(1, 2, 6, 9), (1, 2, 5, 5, 9), (1, 2, 5, 6, 9)}
    assert [by_ids[ids].value for ids in by_ids] == [0.0, 1.0, 1.0]
    assert all(e.value_from == 1 and e.value_to is None for e in examples)  # the completion's


def test_each_decision_is_trained_once_at_the_mean_of_its_searches():
    examples = distill_examples(_Env(), ["item"], _two_searches(), searches_per_item=2)
    decisions = [
        (tuple(e.ids[: t + 1]), tuple(policy))
        for e in examples
        for t, policy in zip(e.positions, e.policy, strict=True)
    ]
    prefixes = [prefix for prefix, _ in decisions]
    assert sorted(prefixes) == [(1, 2), (1, 2, 5), (1, 2, 5, 6), (1, 2, 6)]  # none twice
    root = dict(decisions)[(1, 2)]
    assert np.allclose(root, [0.4, 0.6, 0.0])  # (0.2 + 0.6) / 2, (0.8 + 0.4) / 2
    # A decision sits on the first sequence through it: the root on the failed search's
    # completion, the shared (1 2 5) on the first solution, (1 2 5 6) on the second.
    assert [(e.ids, e.positions) for e in examples] == [
        ([1, 2, 6, 9], [1, 2]),
        ([1, 2, 5, 5, 9], [2]),
        ([1, 2, 5, 6, 9], [3]),
    ]


def test_a_target_on_no_completion_is_a_one_position_sequence():
    decoded = Decoded(
        completions=["x"],
        rewards=np.array([0.0]),
        ids=[(1, 2, 6, 9)],
        forward_passes=3,
        targets=[[_target([1, 2], [0.5, 0.5, 0]), _target([1, 2, 5], [1, 0, 0])]],
        solutions=[[]],
    )
    alone = distill_examples(_Env(), ["item"], decoded)[-1]
    assert alone.ids == [1, 2, 5] and alone.positions == [2]
    assert np.isnan(alone.value)  # a visited node off the path: no value target


def test_decodes_that_do_not_divide_into_the_items_are_refused():
    with pytest.raises(ValueError, match="2 decodes do not make 3 per item for 1 items"):
        distill_examples(_Env(), ["item"], _two_searches(), searches_per_item=3)


def test_a_solving_search_reports_every_verified_completion_in_its_tree(env, countdown):
    decoded = decode(env, countdown.test[:6], "mcts", budget=64)
    assert any(decoded.solutions)
    for ids, reward, solutions in zip(decoded.ids, decoded.rewards, decoded.solutions, strict=True):
        assert bool(solutions) == (reward > 0)
        if solutions:
            assert solutions[0] == ids and len(set(solutions)) == len(solutions)
    examples = distill_examples(env, countdown.test[:6], decoded)
    solved = {s for solutions in decoded.solutions for s in solutions}
    assert solved <= {tuple(e.ids) for e in examples if e.value == 1.0}


def test_repeated_searches_of_a_prompt_explore(env, countdown):
    items = [countdown.test[0]] * 4
    plain = decode(env, items, "mcts", budget=8)
    assert len(set(plain.ids)) == 1  # without noise, the same tree four times
    settings = TreeSearchSettings(dirichlet_fraction=0.25, temperature=1.0)
    explored = decode(env, items, "mcts", budget=8, seed=3, settings=settings)
    assert len(set(explored.ids)) > 1


def test_solving_searches_only_drops_a_failed_search_of_a_solved_item():
    examples = distill_examples(
        _Env(), ["item"], _two_searches(), searches_per_item=2, solving_searches_only=True
    )
    decisions = {
        tuple(e.ids[: t + 1]): tuple(policy)
        for e in examples
        for t, policy in zip(e.positions, e.policy, strict=True)
    }
    assert set(decisions) == {(1, 2), (1, 2, 5), (1, 2, 5, 6)}  # not the failed (1 2 6)
    assert np.allclose(decisions[(1, 2)], [0.6, 0.4, 0.0])  # the solving search's alone
    failed = next(e for e in examples if e.ids == [1, 2, 6, 9])
    assert failed.value == 0.0  # still a value example
    unsolved = Decoded(["x"], np.array([0.0]), [(1, 2, 6, 9)], 3, [[_target([1, 2], [1, 0, 0])]])
    kept = distill_examples(_Env(), ["item"], unsolved, solving_searches_only=True)
    assert kept[0].positions == [1]  # an item no search solved keeps every target


def test_an_unsolved_item_can_train_the_value_head_only():
    unsolved = Decoded(["x"], np.array([0.0]), [(1, 2, 6, 9)], 3, [[_target([1, 2], [1, 0, 0])]])
    (example,) = distill_examples(_Env(), ["item"], unsolved, unsolved_targets=False)
    assert example.ids == [1, 2, 6, 9] and example.positions == [] and example.value == 0.0
    solved = distill_examples(_Env(), ["item"], _two_searches(), 2, unsolved_targets=False)
    assert sum(len(e.positions) for e in solved) == 4  # a solved item keeps its targets


def test_teacher_forcing_adds_next_tokens_off_the_searched_decisions_of_solutions():
    decoded = _two_searches()
    plain = distill_examples(_Env(), ["item"], decoded, 2)
    forced = distill_examples(_Env(), ["item"], decoded, 2, teacher_force_solutions=True)
    by_ids = {tuple(e.ids): e for e in forced}
    first = by_ids[(1, 2, 5, 5, 9)]  # decisions (1 2) and (1 2 5) are searched, (1 2 5 5) not
    assert first.positions == [2, 3] and first.candidates[1] == [9] and first.policy[1] == [1.0]
    assert by_ids[(1, 2, 5, 6, 9)].positions == [3]  # (1 2 5 6) is its one unplaced decision
    failed = by_ids[(1, 2, 6, 9)]  # not verified: unchanged
    assert failed.positions == next(e for e in plain if e.ids == [1, 2, 6, 9]).positions


def test_distinct_searches_each_find_a_new_solution(env, countdown):
    items = countdown.test[:6]
    decoded = decode_distinct(env, items, "mcts", searches=3, budget=64)
    assert len(decoded.ids) == 18 and len(decoded.solutions) == 18
    assert sum(map(bool, decoded.solutions[1::3])) > 0  # second searches solved some again
    for i in range(len(items)):
        found: set = set()
        for solutions in decoded.solutions[3 * i : 3 * i + 3]:
            assert not found & set(solutions)  # a search is solved only by new solutions
            found.update(solutions)
    first = decode(env, items, "mcts", budget=64)
    assert decoded.ids[::3] == first.ids  # the first search is a plain one
    assert decoded.forward_passes < 3 * first.forward_passes  # later ones reuse its nodes
    with pytest.raises(ValueError, match="needs a search method"):
        decode_distinct(env, items, "sample", searches=2, budget=4)
    with pytest.raises(ValueError, match="searches must be >= 1, got 0"):
        decode_distinct(env, items, "mcts", searches=0, budget=4)
    steps = StepTextEnv(env.adapter, env.tokenizer, countdown.task)
    with pytest.raises(ValueError, match="needs token actions"):
        decode_distinct(steps, items, "mcts", searches=2, budget=4)


def test_a_pass_budget_buys_further_distinct_searches(env, countdown):
    items, exploring = (
        countdown.test[:4],
        TreeSearchSettings(dirichlet_fraction=0.25, temperature=1),
    )
    search = partial(decode_distinct, env, items, "mcts", searches=2, budget=16, settings=exploring)
    plain = search()
    assert search(pass_budget=1).ids == plain.ids  # the searches asked for run whatever they cost
    ample = search(pass_budget=10**9)
    runs = MAX_SEARCHES_FACTOR * 2
    assert len(ample.ids) == runs * len(items) and ample.ids[::runs] == plain.ids[::2]
    assert ample.forward_passes > plain.forward_passes
    for i in range(len(items)):  # every further search, too, is solved only by new solutions
        found = [s for solutions in ample.solutions[runs * i : runs * (i + 1)] for s in solutions]
        assert len(found) == len(set(found))
    with pytest.raises(ValueError, match="pass_budget must be >= 0"):
        decode_distinct(env, items, "mcts", searches=2, budget=4, pass_budget=-1)


def distill_config(noise: float = 0.25, **llm) -> TextTrainConfig:
    return TextTrainConfig(llm=LLMConfig(**llm), search=SearchSettings(dirichlet_fraction=noise))


def test_repeated_plain_mcts_searches_are_refused_as_identical():
    with pytest.raises(ValueError, match=r"searches_per_prompt=4 with search\.policy=puct needs"):
        distill_search_settings(
            distill_config(noise=0.0, searches_per_prompt=4, search_temperature=0.0)
        )
    with pytest.raises(ValueError, match="searches_per_prompt must be >= 1, got 0"):
        distill_search_settings(distill_config(searches_per_prompt=0))
    single = distill_search_settings(distill_config(searches_per_prompt=1))
    assert single.dirichlet_fraction == 0.0 and single.temperature == 0.0
    repeated = distill_search_settings(distill_config(searches_per_prompt=2))
    assert repeated.dirichlet_fraction == 0.25 and repeated.temperature == 1.0
    distinct = distill_config(
        noise=0.0, searches_per_prompt=4, search_temperature=0.0, distinct_solutions=True
    )
    assert distill_search_settings(distinct).temperature == 0.0  # they differ once one solves
    with pytest.raises(ValueError, match=r"search_pass_budget=1000: must be 0 \(off\), or > 0"):
        distill_search_settings(distill_config(searches_per_prompt=4, search_pass_budget=1000))


def test_search_sft_imitates_every_solution_whole_and_values_the_failures():
    """Rejection fine-tuning on the searches' solutions: each distinct verified completion in
    the trees is teacher-forced token by token (value 1); the failed one trains the value only."""
    examples = search_verified_examples(_Env(), ["item"], _two_searches(), searches_per_item=2)
    assert [(e.ids, e.positions, e.value) for e in examples] == [
        ([1, 2, 5, 5, 9], [1, 2, 3], 1.0),
        ([1, 2, 5, 6, 9], [1, 2, 3], 1.0),
        ([1, 2, 6, 9], [], 0.0),
    ]
    assert examples[0].candidates == [[5], [5], [9]] and examples[0].policy == [[1.0]] * 3
    assert all(e.value_from == 1 for e in examples)


def test_search_sft_does_not_call_an_earlier_solution_a_failure():
    """A distinct search that decodes a solution an earlier one found scores 0 there: that
    completion stays a solution (value 1), not a value-0 example."""
    decoded = _two_searches()
    decoded.rewards = np.array([1.0, 0.0])
    decoded.ids = [(1, 2, 5, 5, 9), (1, 2, 5, 5, 9)]
    decoded.solutions = [[(1, 2, 5, 5, 9)], []]
    examples = search_verified_examples(_Env(), ["item"], decoded, searches_per_item=2)
    assert [(e.ids, e.value) for e in examples] == [([1, 2, 5, 5, 9], 1.0)]


def test_search_sft_refuses_a_decode_of_another_shape():
    with pytest.raises(ValueError, match="3 decodes do not make 2 per item"):
        decoded = _two_searches()
        decoded.ids.append((1, 2))
        search_verified_examples(_Env(), ["item"], decoded, searches_per_item=2)
