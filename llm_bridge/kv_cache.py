"""Keys and values kept along a decoding tree's branches, for the adapters that reuse them.

A state's cache is a `KVCache`: its root's prompt (one tensor, shared by every descendant), its
own new tokens and a link to its parent's cache, so a tree stores each token's keys and values
once. A child runs only its new tokens through the model. One batched call takes rows of any
past length: each row's past is left-padded to the longest (``[pad | past_i]``), its
new tokens too (``[pad | new_i]``), a key mask hides the pads, and the new tokens carry their true
positions, so every real token sees exactly the keys, values and positions that a full
recompute would give it, and each row's last column is its last real token.

Layout of every tensor here: ``[layers, 2 (key, value), (batch,) heads, tokens, head_dim]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from llm_bridge.adapter import LMState


class KVCache(NamedTuple):
    """A state's keys and values, ``[layers, 2, heads, tokens, head_dim]`` tensors.

    prompt: the root's prompt, shared (never copied) by every descendant of that root.
    own: the tokens this state added to its parent's (none at a root).
    parent: the parent's cache (None at a root): a state's completion is its ancestors' ``own``
        tensors in order, so a node stores only its new tokens, not its whole prefix.
    length: prompt and completion tokens.

    ``LMAdapter.release`` drops a state's reference; a tensor is freed with the last state (or
    descendant) that reaches it.
    """

    prompt: torch.Tensor
    own: torch.Tensor
    parent: KVCache | None
    length: int

    def segments(self) -> list[torch.Tensor]:
        """The prompt, then every ancestor's own tokens and this state's, in order."""
        owns, cache = [], self
        while cache is not None:
            owns.append(cache.own)
            cache = cache.parent
        return [self.prompt, *reversed(owns)]

    @property
    def completion(self) -> torch.Tensor:
        """The completion's keys and values: every token after the prompt."""
        return torch.cat(self.segments()[1:], dim=-2)


class CachedBatch(NamedTuple):
    """One extension call's inputs (P = longest past, N = most new tokens, B rows).

    past: ``[L, 2, B, H, P, D]`` the parents' keys and values, left-padded with zeros (None
        for prompts, which have no past).
    input_ids: ``[B, N]`` int64 new tokens, left-padded with 0.
    key_mask: ``[B, P + N]`` bool, True on real keys (each row's past, then its new tokens).
    positions: ``[B, N]`` int64 each new token's position in its sequence (0 on padding).
    """

    past: torch.Tensor | None
    input_ids: torch.Tensor
    key_mask: torch.Tensor
    positions: torch.Tensor


def prompt_states(
    prompts: Sequence[Sequence[int]], kv: torch.Tensor, *, left_padded: bool = False
) -> list[LMState]:
    """Root states from the keys and values ``[L, 2, B, H, T, D]`` of the ``prompts``, padded
    on the right (or, with ``left_padded``, on the left, as `prompt_batch` lays them out)."""
    empty = kv[:, :, 0, :, :0].clone()
    width = kv.shape[-2]

    def own(row: int, length: int) -> torch.Tensor:
        span = slice(width - length, width) if left_padded else slice(0, length)
        return kv[:, :, row, :, span].clone()

    return [
        LMState(tuple(ids), KVCache(own(row, len(ids)), empty, None, len(ids)))
        for row, ids in enumerate(prompts)
    ]


def prompt_batch(prompts: Sequence[Sequence[int]]) -> CachedBatch:
    """Whole prompts as new tokens after an empty past (``past`` is None), left-padded."""
    input_ids, key_mask, positions = _new_tokens(prompts, [0] * len(prompts), 0)
    return CachedBatch(None, input_ids, key_mask, positions)


def _new_tokens(tokens: Sequence[Sequence[int]], first_positions: Sequence[int], past_width: int):
    """``(input_ids [B, N], key_mask [B, P + N], positions [B, N])`` for left-padded new tokens
    after ``past_width`` past columns; the key mask is set on the real new tokens only."""
    rows, new_width = len(tokens), max(len(ids) for ids in tokens)
    input_ids = torch.zeros(rows, new_width, dtype=torch.long)
    key_mask = torch.zeros(rows, past_width + new_width, dtype=torch.bool)
    positions = torch.zeros(rows, new_width, dtype=torch.long)
    for row, (ids, first) in enumerate(zip(tokens, first_positions, strict=True)):
        input_ids[row, new_width - len(ids) :] = torch.as_tensor(ids, dtype=torch.long)
        key_mask[row, past_width + new_width - len(ids) :] = True
        positions[row, new_width - len(ids) :] = torch.arange(first, first + len(ids))
    return input_ids, key_mask, positions


def attention_mask(key_mask: torch.Tensor, new_width: int) -> torch.Tensor:
    """``[B, N, P + N]`` bool: new position ``i`` may attend to every real past key and to the
    real new keys up to itself. A padding query also sees itself, so that no row of the
    attention is empty (an empty row is NaN, and NaN keys would poison the real rows)."""
    past_width = key_mask.shape[1] - new_width
    query = torch.arange(new_width)[:, None]
    key = torch.arange(past_width + new_width)[None, :]
    causal = key <= past_width + query  # [N, P + N]
    return (key_mask[:, None, :] & causal) | (key == past_width + query)


def left_padded(parents: Sequence[LMState], tokens: Sequence[Sequence[int]]) -> CachedBatch:
    """The `CachedBatch` that extends each parent (a state with a `KVCache`) by its tokens."""
    past = [parent.cache.length for parent in parents]
    past_width = max(past)
    input_ids, key_mask, positions = _new_tokens(tokens, past, past_width)
    layers, _, heads, _, head_dim = parents[0].cache.prompt.shape
    buffer = parents[0].cache.prompt.new_zeros(layers, 2, len(parents), heads, past_width, head_dim)
    for row, parent in enumerate(parents):
        start = past_width - past[row]
        buffer[:, :, row, :, start:past_width] = torch.cat(parent.cache.segments(), dim=-2)
        key_mask[row, start:past_width] = True
    return CachedBatch(buffer, input_ids, key_mask, positions)


def cached_children(
    parents: Sequence[LMState], tokens: Sequence[Sequence[int]], new_kv: torch.Tensor
) -> list[LMState]:
    """The children of an extension, from the new tokens' keys and values ``[L, 2, B, H, N, D]``
    (left-padded as in `CachedBatch`)."""
    width = new_kv.shape[-2]
    children = []
    for row, (parent, new) in enumerate(zip(parents, tokens, strict=True)):
        # A copy: a view would keep the whole batch's tensor alive. Parents are only read.
        own = new_kv[:, :, row, :, width - len(new) :].clone()
        cache = KVCache(parent.cache.prompt, own, parent.cache, parent.cache.length + len(new))
        children.append(LMState(parent.ids + tuple(new), cache))
    return children
