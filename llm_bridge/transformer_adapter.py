"""`LMAdapter` over the project's `TinyLM`: batched recompute of right-padded sequences.

The model is small and the sequences short (Countdown: under 64 characters), so re-reading a
sequence costs about as much as bookkeeping a KV cache; the Hugging Face backend
(`llm_bridge.hf_adapter`) is the one that reuses caches.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from llm_bridge.adapter import LMAdapter, LMOutput, check_overflow, continuation_log_probs
from llm_bridge.models import TinyLM


def pad_right(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``ids [B, T]`` (right-padded with ``pad_id``) and ``lengths [B]``."""
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    ids = torch.full((len(sequences), int(lengths.max())), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
    return ids, lengths


class TransformerAdapter(LMAdapter):
    def __init__(self, model: TinyLM, *, eos_id: int, pad_id: int = 0, overflow: str = "error"):
        super().__init__()
        self.model = model
        self.vocab_size = model.settings.vocab_size
        self.max_length = model.settings.context
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.overflow = check_overflow(overflow)

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
