"""Training examples for the LM, one per sequence, and their collation into a batch.

Every LM objective (pre-training, search distillation, SFT on verified samples, GRPO) reads the
same batch: a right-padded sequence with per-position targets over candidate token ids.

    ids          [B, T]    int64   prompt + completion, padded with ``pad_id``
    target_mask  [B, T]    bool    positions whose next-token distribution is trained
    candidates   [B, T, K] int64   candidate ids at those positions (0 where padded)
    candidate_mask [B, T, K] bool  the candidates that are real (not padding)
    policy       [B, T, K] float32 target probabilities over the candidates
    value        [B]       float32 the verifier's outcome for the completion (0 or 1)
    value_mask   [B, T]    bool    positions whose value head is trained (the completion's)
    advantage    [B]       float32 GRPO's group-relative advantage (0 otherwise)
    old_log_prob [B, T]    float32 log-prob of the sampled token when sampled (GRPO)

Pre-training and SFT are the K = 1 case: the one candidate is the next token, with target 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class SequenceExample:
    ids: list[int]
    positions: list[int]  # t: the distribution after ids[: t + 1] is trained
    candidates: list[list[int]]  # per position
    policy: list[list[float]]  # per position
    value: float = float("nan")  # NaN = no value target
    value_from: int = 0  # first position with a value target
    value_to: int | None = None  # one past the last; None = len(ids) - 1 (not after <eos>)
    advantage: float = 0.0
    old_log_prob: list[float] = field(default_factory=list)  # per position (GRPO)


def next_token_example(
    ids: Sequence[int], prompt_length: int, value: float = float("nan"), advantage: float = 0.0
) -> SequenceExample:
    """Targets = the sequence's own next tokens after the prompt (teacher forcing)."""
    ids = list(ids)
    positions = list(range(prompt_length - 1, len(ids) - 1))
    return SequenceExample(
        ids=ids,
        positions=positions,
        candidates=[[ids[t + 1]] for t in positions],
        policy=[[1.0] for _ in positions],
        value=value,
        value_from=prompt_length - 1,
        advantage=advantage,
    )


def collate(examples: Sequence[SequenceExample], pad_id: int = 0) -> dict[str, torch.Tensor]:
    b = len(examples)
    t = max(len(e.ids) for e in examples)
    k = max((len(c) for e in examples for c in e.candidates), default=1)
    ids = np.full((b, t), pad_id, np.int64)
    target_mask = np.zeros((b, t), bool)
    candidates = np.zeros((b, t, k), np.int64)
    candidate_mask = np.zeros((b, t, k), bool)
    policy = np.zeros((b, t, k), np.float32)
    value = np.zeros(b, np.float32)
    value_mask = np.zeros((b, t), bool)
    advantage = np.zeros(b, np.float32)
    old_log_prob = np.zeros((b, t), np.float32)
    for row, e in enumerate(examples):
        ids[row, : len(e.ids)] = e.ids
        for j, pos in enumerate(e.positions):
            target_mask[row, pos] = True
            cands = np.asarray(e.candidates[j])
            keep = cands >= 0  # -1 pads the decoding's fixed width
            candidates[row, pos, : keep.sum()] = cands[keep]
            candidate_mask[row, pos, : keep.sum()] = True
            policy[row, pos, : keep.sum()] = np.asarray(e.policy[j])[keep]
            if e.old_log_prob:
                old_log_prob[row, pos] = e.old_log_prob[j]
        if not np.isnan(e.value):
            value[row] = e.value
            end = len(e.ids) - 1 if e.value_to is None else e.value_to
            value_mask[row, e.value_from : end] = True
        advantage[row] = e.advantage
    arrays = dict(
        ids=ids,
        target_mask=target_mask,
        candidates=candidates,
        candidate_mask=candidate_mask,
        policy=policy,
        value=value,
        value_mask=value_mask,
        advantage=advantage,
        old_log_prob=old_log_prob,
    )
    return {name: torch.from_numpy(array) for name, array in arrays.items()}
