"""`JudgedStepEnv`: a learned judge replaces the verifier's reward and the value of partial
solutions; the exact verdicts stay aside for measuring, and the judge's passes are counted."""

import numpy as np
import pytest

from llm_bridge.decoding import decode
from llm_bridge.learned_judge import JudgedStepEnv
from llm_bridge.reward_model import RewardEnsemble
from llm_bridge.step_env import StepTextEnv
from llm_bridge.tasks.text_tasks import CountdownTask


class ScoresByLength:
    """A judge whose score is a fixed function of the sequence, so the test can predict it."""

    passes_per_sequence = 1

    def __init__(self):
        self.calls = 0

    def probability(self, sequences):
        self.calls += len(sequences)
        return np.array([(len(s) % 7) / 7 for s in sequences], np.float32)


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_the_judge_sets_rewards_and_values_and_the_exact_verdicts_are_kept(env, countdown, weight):
    task = CountdownTask()
    judge = ScoresByLength()
    items = countdown.test[:3]
    plain = StepTextEnv(env.adapter, env.tokenizer, task)
    judged = JudgedStepEnv(env.adapter, env.tokenizer, task, judge, judge_weight=weight)
    for plain_root, judged_root in zip(plain.reset(items), judged.reset(items), strict=True):
        for a, b in zip(plain_root.children, judged_root.children, strict=True):
            if a is None:
                assert b is None
                continue
            score = (len(b.state.ids) + 1) % 7 / 7  # partial solutions end with ","
            assert b.value == pytest.approx(weight * score + (1 - weight) * a.value)
            assert judged.scores[b.state.ids] == pytest.approx(score)
    assert judge.calls == judged.judge_passes == len(judged.scores)
    decoded = decode(judged, items, "mcts", budget=16)
    returned = zip(items, decoded.ids, decoded.completions, decoded.rewards, strict=True)
    for item, ids, completion, reward in returned:
        assert reward == float(judged.scores[ids] >= 0.5)  # the judge's verdict, not the truth
        assert judged.exact_rewards[ids] == task.reward(item, completion)


def test_bad_judge_settings_are_refused(env):
    with pytest.raises(ValueError, match="judge_weight"):
        JudgedStepEnv(env.adapter, env.tokenizer, CountdownTask(), ScoresByLength(), judge_weight=2)


def test_an_ensemble_judge_is_charged_one_pass_per_member(env, countdown):
    members = [ScoresByLength(), ScoresByLength(), ScoresByLength()]
    judged = JudgedStepEnv(env.adapter, env.tokenizer, CountdownTask(), RewardEnsemble(members))
    judged.reset(countdown.test[:2])
    assert judged.judge_passes == 3 * len(judged.scores) == sum(m.calls for m in members)
