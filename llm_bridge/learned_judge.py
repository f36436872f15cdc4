"""Step-level decoding judged by a learned reward model instead of the exact verifier: the regime
where no exact checker exists, and where a search optimises against the judge's mistakes.

`JudgedStepEnv` is `StepTextEnv` with two substitutions, both from a `Judge`
(`llm_bridge.reward_model.RewardModel` or `RewardEnsemble`): a finished completion's reward is 1
when the model scores it at ``threshold`` or above (so a search stops at the first completion
the model accepts, as it would at a verified one), and a partial solution's value is the model's
probability that it can still reach the target, mixed with the LM's own value head by
``judge_weight`` (1 = the learned model alone). The exact verdicts are kept aside (``exact_rewards``) to measure what the search
really found, and the model's forward passes are counted (``judge_passes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from llm_bridge.adapter import LMAdapter
from llm_bridge.step_env import StepTask, StepTextEnv
from llm_bridge.text_env import TextNode
from llm_bridge.tokenizer import CharTokenizer


class Judge(Protocol):
    """What the search needs of a judge (`RewardModel`, `RewardEnsemble`)."""

    passes_per_sequence: int

    def probability(self, sequences: Sequence[Sequence[int]]) -> np.ndarray: ...


class JudgedStepEnv(StepTextEnv):
    def __init__(
        self,
        adapter: LMAdapter,
        tokenizer: CharTokenizer,
        task: StepTask,
        judge: Judge,
        *,
        judge_weight: float = 1.0,
        threshold: float = 0.5,
    ):
        if not 0 <= judge_weight <= 1:
            raise ValueError(f"judge_weight must be in [0, 1], got {judge_weight}")
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        super().__init__(adapter, tokenizer, task)
        self.judge, self.judge_weight, self.threshold = judge, judge_weight, threshold
        self.judge_passes = 0
        self.scores: dict[tuple[int, ...], float] = {}  # the judge's score per sequence
        self.exact_rewards: dict[tuple[int, ...], float] = {}  # the verifier's, for measuring
        self._step_end = (tokenizer.token_id(","),)  # partial solutions were labelled so

    def _expand(self, nodes: list[TextNode]) -> None:
        super()._expand(nodes)
        children = [c for n in nodes for c in n.children or () if c is not None]
        fresh = {c.state.ids: c for c in children if c.state.ids not in self.scores}
        if fresh:  # one judge pass per distinct sequence (equal numbers give equal steps)
            judged = [ids if c.terminal else ids + self._step_end for ids, c in fresh.items()]
            self.judge_passes += len(fresh) * self.judge.passes_per_sequence
            scores = self.judge.probability(judged)
            self.scores.update(zip(fresh, map(float, scores), strict=True))
        for child in children:  # all new objects: a node is expanded once
            self._judge(child, self.scores[child.state.ids])

    def _judge(self, child: TextNode, score: float) -> None:
        if child.terminal:
            self.exact_rewards[child.state.ids] = child.reward
            child.reward = float(score >= self.threshold)
        else:
            w = self.judge_weight
            child.value = w * score + (1 - w) * child.value
