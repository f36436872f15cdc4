"""`StepTextEnv`: step-level decoding over a task's fixed set of step actions.

Where `TextEnv` chooses one token at a time, here an action is a whole reasoning step from a
fixed, padded action set (Countdown: which two numbers and which of the six operations, 36
actions for four numbers). The LM scores every legal step as a continuation of the text so far
(``LMAdapter.score``: one pass per candidate), the log-probabilities are the search's prior
logits, and the value head read after each step is that child's value. Nodes are `TextNode`s
whose ``candidates`` are step-action ids, so every decoding method applies unchanged (search
distillation needs token targets and stays token-level).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from llm_bridge.adapter import LMAdapter, LMState
from llm_bridge.text_env import TextNode, absorbed, step_output
from llm_bridge.tokenizer import CharTokenizer


class StepTask(Protocol):
    def prompt(self, item: Any) -> str: ...

    def step_width(self, item: Any) -> int: ...

    def steps(self, item: Any, completion: str) -> list[tuple[str, bool] | None]:
        """Per action: ``(text appended to the completion, ends the episode)`` or None."""

    def reward(self, item: Any, completion: str) -> float: ...


class StepTextEnv:
    def __init__(self, adapter: LMAdapter, tokenizer: CharTokenizer, task: StepTask):
        self.adapter = adapter
        self.tokenizer = tokenizer
        self.task = task
        self.items: list[Any] = []
        self.width = 0

    def prompt_ids(self, item: Any) -> list[int]:
        return [self.tokenizer.bos_id, *self.tokenizer.encode(self.task.prompt(item))]

    def reset(self, items: Sequence[Any]) -> list[TextNode]:
        self.items = list(items)
        self.width = max(self.task.step_width(item) for item in self.items)
        states = [LMState(tuple(self.adapter.fit(self.prompt_ids(item)))) for item in self.items]
        values = self.adapter.evaluate([s.ids for s in states]).value.numpy()
        roots = [
            TextNode(row, state, "", *self._empty(), float(values[row]))
            for row, state in enumerate(states)
        ]
        self._expand(roots)
        return roots

    def step(self, parents: Sequence[TextNode], actions: Sequence[int]) -> list[TextNode]:
        children = []
        for parent, action in zip(parents, actions, strict=True):
            if parent.terminal:  # past the end: an absorbing copy
                children.append(absorbed(parent))
                continue
            child = parent.children[int(action)]  # built (and valued) when parent expanded
            if child is None:
                raise ValueError(f"action {action} is not a legal step here")
            children.append(child)
        self._expand([c for c in children if not c.terminal and c.candidates is None])
        return children

    def recurrent_fn(self, parents: list[TextNode], actions: np.ndarray):
        children = self.step(parents, actions)
        return step_output(children), children

    def _empty(self):
        return (
            np.full(self.width, -1, np.int64),
            np.ones(self.width, bool),
            np.zeros(self.width, np.float32),
        )

    def _expand(self, nodes: list[TextNode]) -> None:
        """Score every legal step of ``nodes`` in one batched call; attach the children."""
        parents, continuations, owners = [], [], []
        for node in nodes:
            node.candidates = np.full(self.width, -1, np.int64)
            node.legal = np.zeros(self.width, bool)
            node.prior_logits = np.zeros(self.width, np.float32)
            node.children = [None] * self.width
            for action, step in enumerate(self.task.steps(self.items[node.row], node.completion)):
                if step is None:
                    continue
                text, ends = step
                tokens = self.tokenizer.encode(text) + ([self.tokenizer.eos_id] if ends else [])
                parents.append(node.state)
                continuations.append(tokens)
                owners.append((node, action, text, ends, tokens))
        if not owners:
            return
        output = self.adapter.score(parents, continuations)
        for (node, action, text, ends, tokens), log_prob, value in zip(
            owners, output.logits.numpy(), output.value.numpy(), strict=True
        ):
            node.candidates[action] = action
            node.legal[action] = True
            node.prior_logits[action] = log_prob
            completion = node.completion + text
            child = TextNode(
                node.row,
                LMState(node.state.ids + tuple(tokens)),
                completion,
                None,
                None,
                None,
                0.0 if ends else float(value),
                terminal=ends,
            )
            if ends:
                child.candidates, child.legal, child.prior_logits = self._empty()
                child.reward = float(self.task.reward(self.items[node.row], completion))
            node.children[action] = child
