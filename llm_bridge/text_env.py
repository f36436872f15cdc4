"""`TextEnv`: a language model's decoding as a batched, searchable MDP.

A state is a prompt plus the completion so far (a `TextNode`); an action picks one of the
node's ``width`` candidate next tokens (the model's top-k among the tokens the task's grammar
allows, padded with illegal slots so the numba tree has a fixed width); the episode ends at
``<eos>`` or after ``max_new_tokens``, and the task's verifier gives the only reward (1 or 0).

Tokens the grammar forces (a single allowed continuation, e.g. the digits of an arithmetic
result) are appended with the chosen token in the same model call: they are not decisions, and
spending search simulations on them would only waste forward passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from llm_bridge.adapter import LMAdapter, LMState
from llm_bridge.tokenizer import CharTokenizer
from search import StepOutput

NO_TOKEN = -1


class TextTask(Protocol):
    """A task: prompts, an optional grammar over next characters, and an exact verifier."""

    def prompt(self, item: Any) -> str: ...

    def allowed_next(self, item: Any, completion: str) -> frozenset[str] | None:
        """Characters (or ``"<eos>"``) that may follow ``completion``; None = no grammar."""

    def reward(self, item: Any, completion: str) -> float: ...


@dataclass(eq=False)
class TextNode:
    """A decoding-tree node. ``candidates``/``legal``/``prior_logits`` are ``[width]``."""

    row: int  # which prompt of the batch
    state: LMState
    completion: str
    candidates: np.ndarray  # int64 token ids, NO_TOKEN where padded
    legal: np.ndarray  # bool
    prior_logits: np.ndarray  # float32, the model's logits of the candidates
    value: float  # the value head's estimate (0 for terminal nodes)
    terminal: bool = False
    reward: float = 0.0  # the verifier's reward, for terminal nodes
    children: list | None = None  # step-level decoding: the children by action, once scored


class TextEnv:
    """Turns an `LMAdapter` and a `TextTask` into roots and children for search and decoding."""

    def __init__(
        self,
        adapter: LMAdapter,
        tokenizer: CharTokenizer,
        task: TextTask,
        *,
        width: int = 8,
        max_new_tokens: int = 48,
    ):
        if width < 2:
            raise ValueError(f"action width must be >= 2, got {width}")
        self.adapter = adapter
        self.tokenizer = tokenizer
        self.task = task
        self.width = width
        self.max_new_tokens = max_new_tokens
        self.items: list[Any] = []
        # Nodes already evaluated in this decode, by token ids: a prefix the model has read
        # once (by a sibling, an earlier search, another sample) costs no second pass. Every
        # decoding method shares it, so compute comparisons stay fair.
        self._seen: dict[tuple[int, ...], TextNode] = {}
        self._roots: list[TextNode] = []
        # Per row: completions (token ids) that earn no reward in this search, because an
        # earlier search of the same prompt already found them (see `restart`).
        self._known: list[frozenset[tuple[int, ...]]] = []

    def prompt_ids(self, item: Any) -> list[int]:
        return [self.tokenizer.bos_id, *self.tokenizer.encode(self.task.prompt(item))]

    def reset(self, items: Sequence[Any]) -> list[TextNode]:
        """Root nodes for a batch of task items (one model pass each)."""
        self.items = list(items)
        self._seen = {}
        self._known = [frozenset()] * len(self.items)
        states, output = self.adapter.start([self.prompt_ids(item) for item in self.items])
        logits, values = output.logits.numpy(), output.value.numpy()
        self._roots = [
            self._node(row, state, "", logits[row], float(values[row]))
            for row, state in enumerate(states)
        ]
        return list(self._roots)

    def restart(self, known: Sequence[set[tuple[int, ...]]]) -> list[TextNode]:
        """The roots of the last `reset` again, for another search of the same prompts by the
        same model: every node evaluated since that reset is kept, so the new search pays only
        for prefixes new to it. ``known[row]`` are completions (token ids) that now earn reward
        0, so a search looking for another solution is not satisfied by one already found."""
        if len(known) != len(self.items):
            raise ValueError(f"known has {len(known)} rows, the batch {len(self.items)}")
        self._known = [frozenset(k) for k in known]
        return list(self._roots)

    def step(self, parents: Sequence[TextNode], actions: Sequence[int]) -> list[TextNode]:
        """Children of ``parents`` by candidate slot; one batched model call for the live ones."""
        children: list[TextNode | None] = [None] * len(parents)
        pending: dict[tuple[int, ...], list] = {}  # child ids -> [parent, tokens, text, rows]
        for i, (parent, action) in enumerate(zip(parents, actions, strict=True)):
            if parent.terminal:  # past the end: an absorbing copy, no model call
                children[i] = absorbed(parent)
                continue
            token = int(parent.candidates[action])
            if token == NO_TOKEN:
                raise ValueError(f"action {action} is not a candidate of this node")
            tokens, text, ended = self._with_forced(parent, token)
            ids = parent.state.ids + tuple(tokens)
            if ids in self._seen:
                children[i] = self._seen[ids]
            elif ended:
                children[i] = self._seen[ids] = self._terminal(parent, tokens, text)
            elif ids in pending:  # a duplicate within this batch: evaluated once
                pending[ids][3].append(i)
            else:
                pending[ids] = [parent, tokens, text, [i]]
        if pending:
            work = list(pending.values())
            states, output = self.adapter.extend([w[0].state for w in work], [w[1] for w in work])
            logits, values = output.logits.numpy(), output.value.numpy()
            for j, ((parent, _, text, rows), state) in enumerate(zip(work, states, strict=True)):
                node = self._node(parent.row, state, text, logits[j], float(values[j]))
                self._seen[state.ids] = node
                for i in rows:
                    children[i] = node
        return [
            self._unless_known(p.row, child) for p, child in zip(parents, children, strict=True)
        ]

    def recurrent_fn(self, parents: list[TextNode], actions: np.ndarray):
        """The search's model seam (see `step_output`)."""
        children = self.step(parents, actions)
        return step_output(children), children

    # -- internals -------------------------------------------------------------------------

    def _unless_known(self, row: int, node: TextNode) -> TextNode:
        """``node``, or a copy with reward 0 if it completes one of ``row``'s known solutions
        (the cached node keeps its reward for searches that do not know it)."""
        if node.terminal and node.reward > 0 and node.state.ids in self._known[row]:
            return replace(node, reward=0.0)
        return node

    def _allowed_ids(self, row: int, completion: str) -> list[int] | None:
        allowed = self.task.allowed_next(self.items[row], completion)
        if allowed is None:
            return None
        return sorted(self.tokenizer.token_id(t) for t in allowed)

    def _with_forced(self, parent: TextNode, token: int) -> tuple[list[int], str, bool]:
        """``[token, *forced]``, the completion after them, and whether the episode ended."""
        tokens, text = [], parent.completion
        while True:
            tokens.append(token)
            if token == self.tokenizer.eos_id:
                return tokens, text, True
            text += self.tokenizer.tokens[token]
            if len(text) >= self.max_new_tokens:
                return tokens, text, True
            allowed = self._allowed_ids(parent.row, text)
            if allowed is None or len(allowed) != 1:
                return tokens, text, not allowed and allowed is not None
            token = allowed[0]

    def _terminal(self, parent: TextNode, tokens: list[int], text: str) -> TextNode:
        """The node ending the episode at ``text`` (``_absorbed`` past it): the verifier's
        reward, no model call."""
        reward = float(self.task.reward(self.items[parent.row], text))
        return TextNode(
            parent.row,
            LMState(parent.state.ids + tuple(tokens)),
            text,
            np.full(self.width, NO_TOKEN, np.int64),
            np.ones(self.width, bool),
            np.zeros(self.width, np.float32),
            0.0,
            terminal=True,
            reward=reward,
        )

    def _node(self, row: int, state: LMState, text: str, logits: np.ndarray, value: float):
        allowed = self._allowed_ids(row, text)
        if allowed is None:
            allowed_logits = logits
            ids = np.arange(len(logits))
        else:
            ids = np.asarray(allowed, np.int64)
            allowed_logits = logits[ids]
        top = np.argsort(-allowed_logits, kind="stable")[: self.width]
        candidates = np.full(self.width, NO_TOKEN, np.int64)
        prior = np.zeros(self.width, np.float32)
        candidates[: len(top)] = ids[top]
        prior[: len(top)] = allowed_logits[top]
        legal = candidates != NO_TOKEN
        node = TextNode(row, state, text, candidates, legal, prior, value)
        if not legal.any():  # the grammar allows nothing: a dead end, scored by the verifier
            node = self._terminal(node, [], text)
        return node


def step_output(children: Sequence[TextNode]) -> StepOutput:
    """What the search needs about new nodes: the verifier's reward on the edge into a terminal
    node, discount 0 there and 1 elsewhere (single agent, undiscounted), priors, values, legal
    masks (the grammar's, inside the tree too)."""
    return StepOutput(
        reward=np.array([c.reward for c in children], np.float32),
        discount=np.array([0.0 if c.terminal else 1.0 for c in children], np.float32),
        prior_logits=np.stack([c.prior_logits for c in children]),
        value=np.array([c.value for c in children], np.float32),
        legal=np.stack([c.legal for c in children]),
    )


def absorbed(parent: TextNode) -> TextNode:
    """The node past a terminal one: same text, reward 0, value 0 (the search may descend
    below a terminal node; the edge's discount 0 already ends the return there)."""
    return TextNode(
        parent.row,
        parent.state,
        parent.completion,
        parent.candidates,
        parent.legal,
        parent.prior_logits,
        0.0,
        terminal=True,
        reward=0.0,
    )
