"""`LMAdapter` over the project's `TinyLM`: batched recompute of right-padded sequences, or
(``use_cache=True``) keys and values kept along the tree's branches (`llm_bridge.kv_cache`).

Recompute re-reads every prefix at every step; the cache runs only a child's new tokens: 2-3.5x
faster decoding on Countdown (``benchmarks/tiny_lm_cache.py``). Its numbers equal recompute's to
float rounding, not bit for bit, so the recorded Countdown runs, made with recompute, stay
reproducible only with it: hence it is opt-in (``llm.kv_cache=true``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from llm_bridge.adapter import (
    LMAdapter,
    LMOutput,
    LMState,
    check_overflow,
    continuation_log_probs,
)
from llm_bridge.kv_cache import (
    KVCache,
    attention_mask,
    cached_children,
    left_padded,
    prompt_batch,
    prompt_states,
)
from llm_bridge.models import TinyLM


def pad_right(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``ids [B, T]`` (right-padded with ``pad_id``) and ``lengths [B]``."""
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    ids = torch.full((len(sequences), int(lengths.max())), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
    return ids, lengths


class TransformerAdapter(LMAdapter):
    """``use_cache``: keep each state's keys and values and run only new tokens (see above)."""

    def __init__(
        self,
        model: TinyLM,
        *,
        eos_id: int,
        pad_id: int = 0,
        overflow: str = "error",
        use_cache: bool = False,
    ):
        super().__init__()
        self.model = model
        self.vocab_size = model.settings.vocab_size
        self.max_length = model.settings.context
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.overflow = check_overflow(overflow)
        self.use_cache = use_cache

    # -- KV cache ----------------------------------------------------------------------------

    def start(self, prompts: Sequence[Sequence[int]]) -> tuple[list[LMState], LMOutput]:
        prompts = [self.fit(prompt) for prompt in prompts]
        if not self.use_cache or not prompts or not all(prompts):
            return super().start(prompts)  # an empty prompt gets recompute's error
        self.forward_passes += len(prompts)
        output, kv = self._forward_cached(prompt_batch(prompts))
        return prompt_states(prompts, kv, left_padded=True), output

    def extend(
        self, parents: Sequence[LMState], tokens: Sequence[Sequence[int]]
    ) -> tuple[list[LMState], LMOutput]:
        """Cached when every parent has a cache and every child fits the context; otherwise
        the whole call recomputes (its children then have no cache, nor their descendants)."""
        tokens = [list(new) for new in tokens]
        cacheable = self.use_cache and all(
            isinstance(parent.cache, KVCache)
            and new
            and len(parent.ids) + len(new) <= self.max_length
            for parent, new in zip(parents, tokens, strict=True)
        )
        if not cacheable or not parents:
            return super().extend(parents, tokens)
        self.forward_passes += len(parents)
        children: list[LMState] = [None] * len(parents)  # type: ignore[list-item]
        logits = torch.empty(len(parents), self.vocab_size)
        value = torch.empty(len(parents))
        for rows in _length_buckets(tokens):
            batch_parents, batch_tokens = [parents[i] for i in rows], [tokens[i] for i in rows]
            output, new_kv = self._forward_cached(left_padded(batch_parents, batch_tokens))
            batch_children = cached_children(batch_parents, batch_tokens, new_kv)
            for i, child in zip(rows, batch_children, strict=True):
                children[i] = child
            logits[rows], value[rows] = output.logits, output.value
        return children, LMOutput(logits, value)

    @torch.inference_mode()
    def _forward_cached(self, batch) -> tuple[LMOutput, torch.Tensor]:
        """The model on a `kv_cache.CachedBatch`: the output at each row's last token and the
        new tokens' keys and values ``[L, 2, B, H, N, D]``. No switch to eval mode (it walks
        every module, a cost per call): the cached forward has no dropout in either mode."""
        device = next(self.model.parameters()).device
        mask = attention_mask(batch.key_mask, batch.input_ids.shape[1])
        past = None if batch.past is None else batch.past.to(device)
        logits, value_logit, new_kv = self.model.forward_cached(
            batch.input_ids.to(device), batch.positions.to(device), past, mask.to(device)
        )
        output = LMOutput(logits.float().cpu(), torch.sigmoid(value_logit).float().cpu())
        return output, new_kv

    def _heads(self, sequences: Sequence[Sequence[int]]):
        """The model (in eval mode) on right-padded ``sequences``: ``(LMHeads, lengths [B])``."""
        device = next(self.model.parameters()).device
        ids, lengths = pad_right(sequences, self.pad_id)
        was_training = self.model.training
        self.model.eval()
        heads = self.model(ids.to(device))
        self.model.train(was_training)
        return heads, lengths.to(device)

    @torch.inference_mode()
    def _evaluate(self, sequences: Sequence[Sequence[int]]) -> LMOutput:
        if not sequences:
            return LMOutput(torch.zeros(0, self.vocab_size), torch.zeros(0))
        heads, lengths = self._heads(sequences)
        rows = torch.arange(len(sequences), device=lengths.device)
        logits = heads.logits[rows, lengths - 1].float().cpu()
        value = torch.sigmoid(heads.value_logit[rows, lengths - 1]).float().cpu()
        return LMOutput(logits, value)

    @torch.inference_mode()
    def _score(self, prefixes, continuations) -> LMOutput:
        """Teacher-forced log-probability of each continuation after its prefix (one batched
        forward over the concatenations)."""
        if not continuations:
            return LMOutput(torch.zeros(0), torch.zeros(0))
        sequences = [[*p, *c] for p, c in zip(prefixes, continuations, strict=True)]
        heads, lengths = self._heads(sequences)
        log_probs = torch.log_softmax(heads.logits.float(), -1)
        rows = torch.arange(len(sequences), device=lengths.device)
        value = torch.sigmoid(heads.value_logit[rows, lengths - 1]).float().cpu()
        return LMOutput(continuation_log_probs(log_probs, prefixes, continuations), value)


def _length_buckets(tokens: Sequence[Sequence[int]]) -> list[list[int]]:
    """Rows grouped by their count of new tokens, rounded up to a power of two. A call's new
    tokens are padded to its longest row's, and most rows add one token while grammar-forced
    runs add up to ten: one group each keeps the padding under half of the work."""
    buckets: dict[int, list[int]] = {}
    for row, new in enumerate(tokens):
        buckets.setdefault(1 << (len(new) - 1).bit_length(), []).append(row)
    return [buckets[size] for size in sorted(buckets)]
