"""TextEnv: grammar-constrained candidates, forced tokens, verifier rewards, the pass cache,\nrestarts that know earlier solutions."""

import numpy as np
import pytest

from llm_bridge.tasks.countdown import Puzzle
from llm_bridge.text_env import NO_TOKEN, TextEnv
from llm_bridge.transformer_adapter import TransformerAdapter


def _act(env, node, char):
    """The action whose candidate is ``char`` (the env must offer it)."""
    token = env.tokenizer.token_id(char)
    slots = np.flatnonzero(node.candidates == token)
    assert len(slots) == 1, f"{char!r} is not a candidate after {node.completion!r}"
    return env.step([node], [int(slots[0])])[0]


def _solve(env, node):
    """Plays 3/4=3|4, 1-3|4=1|4, 6/1|4=24 from the root of Puzzle((1, 3, 4, 6))."""
    for char in "3/4" + "1-" + "6/":
        node = _act(env, node, char)
    return node


@pytest.fixture
def wide_env(tiny_model, tokenizer, countdown):
    """Width = vocabulary, so every grammar-allowed token is a candidate."""
    adapter = TransformerAdapter(tiny_model, eos_id=tokenizer.eos_id)
    return TextEnv(adapter, tokenizer, countdown.task, width=tokenizer.vocab_size)


def test_candidates_are_exactly_the_grammar_allowed_tokens(wide_env):
    root = wide_env.reset([Puzzle((1, 3, 4, 6))])[0]
    offered = {wide_env.tokenizer.tokens[t] for t in root.candidates[root.legal]}
    assert offered == {"1", "3", "4", "6"}
    assert (root.candidates[~root.legal] == NO_TOKEN).all()


def test_forced_tokens_ride_along_with_the_choice_and_the_solution_earns_reward_one(wide_env):
    # Only the choices are made here; "=3|4," etc. follow because the grammar forces them.
    node = _solve(wide_env, wide_env.reset([Puzzle((1, 3, 4, 6))])[0])
    assert node.terminal and node.reward == 1.0
    assert node.completion == "3/4=3|4,1-3|4=1|4,6/1|4=24"
    assert node.state.ids[-1] == wide_env.tokenizer.eos_id


def test_a_wrong_final_number_ends_with_reward_zero(wide_env):
    node = wide_env.reset([Puzzle((1, 3, 4, 6))])[0]
    for char in "1+3" + "4+4" + "6+":  # the last operand is forced: only 8 is left
        node = _act(wide_env, node, char)
    assert node.terminal and node.reward == 0.0 and node.completion.endswith("=14")


def test_a_prefix_read_once_costs_no_second_forward_pass(env):
    root = env.reset([Puzzle((1, 3, 4, 6))])[0]
    passes = env.adapter.forward_passes
    first = env.step([root, root], [0, 0])  # duplicates within one call: one pass
    again = env.step([root], [0])  # and across calls: none
    assert env.adapter.forward_passes == passes + 1
    assert first[0] is first[1] is again[0]


def test_a_restart_keeps_evaluated_nodes_and_a_known_solution_earns_nothing(wide_env):
    root = wide_env.reset([Puzzle((1, 3, 4, 6))])[0]
    node = _solve(wide_env, root)
    solution, passes = node.state.ids, wide_env.adapter.forward_passes
    again = wide_env.restart([{solution}])[0]
    assert again is root
    again = _solve(wide_env, again)
    assert again.state.ids == solution and again.reward == 0.0  # known: no reward this time
    assert wide_env.adapter.forward_passes == passes  # every prefix was read before the restart
    assert node.reward == 1.0  # the cached node is untouched
    assert wide_env.restart([set()])[0] is root and _solve(wide_env, root).reward == 1.0
    with pytest.raises(ValueError, match="known has 2 rows, the batch 1"):
        wide_env.restart([set(), set()])


def test_width_below_two_is_refused(tiny_model, tokenizer, countdown):
    with pytest.raises(ValueError, match="width"):
        TextEnv(TransformerAdapter(tiny_model, eos_id=2), tokenizer, countdown.task, width=1)


def test_step_actions_score_every_legal_step_and_a_solution_earns_reward_one(
    tiny_model, tokenizer, countdown
):
    from llm_bridge.step_env import StepTextEnv

    env = StepTextEnv(
        TransformerAdapter(tiny_model, eos_id=tokenizer.eos_id), tokenizer, countdown.task
    )
    root = env.reset([Puzzle((1, 3, 4, 6))])[0]
    steps = countdown.task.steps(Puzzle((1, 3, 4, 6)), "")
    assert root.legal.tolist() == [s is not None for s in steps]
    assert env.adapter.forward_passes == 1 + root.legal.sum()  # the root, then each step
    node = root
    for text in ("3/4=3|4", ",1-3|4=1|4", ",6/1|4=24"):
        steps = countdown.task.steps(Puzzle((1, 3, 4, 6)), node.completion)
        node = env.step([node], [[s and s[0] for s in steps].index(text)])[0]
    assert node.terminal and node.reward == 1.0 and node.completion == "3/4=3|4,1-3|4=1|4,6/1|4=24"
