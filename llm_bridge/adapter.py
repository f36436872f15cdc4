"""The seam between a language model and the search: ``LMAdapter``.

A decoding tree's node is an `LMState` (the token ids so far plus a backend cache handle). The
search asks for children of many nodes at once: ``extend(parents, tokens)`` appends tokens to
each parent and returns the children with ``LMOutput(logits [B, V], value [B])``. Siblings fork
the same parent: a backend with a KV cache (`llm_bridge.hf_adapter`) reuses the parent's cache
so the shared prefix is never recomputed; a backend without one (`TransformerAdapter`) simply
re-reads the whole sequence, which is cheap for the project's small model.

``forward_passes`` counts sequences evaluated (one per row of every call), the unit in which
every decoding method's compute is matched.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

OVERFLOW_CHOICES = ("error", "truncate_left")


def check_overflow(overflow: str, key: str = "overflow") -> str:
    """``overflow`` if it is one of `OVERFLOW_CHOICES`; else an error naming ``key``."""
    if overflow not in OVERFLOW_CHOICES:
        raise ValueError(f"{key} must be one of {' | '.join(OVERFLOW_CHOICES)}, got {overflow!r}")
    return overflow


class LMOutput(NamedTuple):
    """logits: ``[B, V]`` float32 next-token logits after each sequence.
    value: ``[B]`` float32, the value head's estimate that the completion will verify (in
    [0, 1] for a 0/1 verifier reward; 0 for a model without a value head)."""

    logits: torch.Tensor
    value: torch.Tensor


@dataclass(eq=False)
class LMState:
    """One node of a decoding tree: the full token ids (prompt + completion) and an opaque,
    backend-owned cache handle (``None`` for backends that recompute)."""

    ids: tuple[int, ...]
    cache: Any = None


class LMAdapter(ABC):
    """Batched evaluation of token sequences, with cache hooks (start / extend / release).

    Subclasses set ``vocab_size``, ``eos_id``, ``max_length`` and implement ``_evaluate``
    (full sequences, no cache); backends with a cache override ``start``/``extend``/``release``.
    """

    vocab_size: int
    eos_id: int
    max_length: int  # the model's context, in tokens
    overflow: str = "error"  # a prompt longer than the context: "error" or "truncate_left"

    def __init__(self) -> None:
        self.forward_passes = 0

    @abstractmethod
    def _evaluate(self, sequences: Sequence[Sequence[int]]) -> LMOutput:
        """Evaluate whole sequences (no cache)."""

    def evaluate(self, sequences: Sequence[Sequence[int]]) -> LMOutput:
        """Next-token logits and value after each sequence; counts ``len(sequences)`` passes."""
        self.forward_passes += len(sequences)
        return self._evaluate([self.fit(ids) for ids in sequences])

    def start(self, prompts: Sequence[Sequence[int]]) -> tuple[list[LMState], LMOutput]:
        """The root states of a batch of prompts (prompts too long for the context follow
        ``overflow``)."""
        states = [LMState(tuple(self.fit(prompt))) for prompt in prompts]
        return states, self.evaluate([state.ids for state in states])

    def extend(
        self, parents: Sequence[LMState], tokens: Sequence[Sequence[int]]
    ) -> tuple[list[LMState], LMOutput]:
        """Children ``parent.ids + tokens[i]``; parents stay valid (siblings fork them)."""
        children = [
            LMState(parent.ids + tuple(new)) for parent, new in zip(parents, tokens, strict=True)
        ]
        return children, self.evaluate([child.ids for child in children])

    def score(self, parents: Sequence[LMState], continuations: Sequence[Sequence[int]]) -> LMOutput:
        """Step proposals: ``LMOutput(logits=log p(continuation | parent) [M], value [M])``,
        the value read after the continuation; one pass per continuation."""
        self.forward_passes += len(continuations)
        return self._score([self.fit(p.ids) for p in parents], continuations)

    @abstractmethod
    def _score(
        self, prefixes: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]
    ) -> LMOutput:
        """Teacher-forced ``log p(continuation | prefix)`` and the value after it."""

    def release(self, states: Iterable[LMState]) -> None:
        """Drop the caches of states the caller no longer needs."""
        for state in states:
            state.cache = None

    def fit(self, ids: Sequence[int]) -> list[int]:
        """``ids`` if they fit the context; otherwise an error or the last ``max_length``
        tokens, as ``overflow`` says."""
        ids = list(ids)
        if len(ids) <= self.max_length:
            return ids
        if self.overflow == "truncate_left":
            return ids[-self.max_length :]
        if self.overflow == "error":
            raise ValueError(
                f"sequence of {len(ids)} tokens exceeds the model's context of "
                f"{self.max_length}; shorten the prompt or set overflow='truncate_left'"
            )
        raise ValueError(f"overflow must be one of {OVERFLOW_CHOICES}, got {self.overflow!r}")


def continuation_log_probs(
    log_probs: torch.Tensor,  # [B, T, V] next-token log-probs of the concatenated sequences
    prefixes: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
) -> torch.Tensor:
    """``[B]`` summed log-probability of each continuation after its prefix."""
    positions = torch.zeros(log_probs.shape[:2], dtype=torch.bool)
    tokens = torch.zeros(log_probs.shape[:2], dtype=torch.long)
    for row, (prefix, continuation) in enumerate(zip(prefixes, continuations, strict=True)):
        # The logits at position t predict token t + 1.
        span = slice(len(prefix) - 1, len(prefix) + len(continuation) - 1)
        positions[row, span] = True
        tokens[row, span] = torch.as_tensor(continuation, dtype=torch.long)
    picked = log_probs.gather(-1, tokens.to(log_probs.device)[..., None]).squeeze(-1).cpu()
    return (picked * positions).sum(1)
