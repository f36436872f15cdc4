"""Pure, typed loss functions: tensors in, ``LossOutput(loss, metrics)`` out.

Each returns a scalar loss (weighted by importance weights when prioritized replay gives them)
and detached per-sample errors, so the system can log them and hand new priorities back to
replay. MuZero adds its reward and consistency terms beside these; the LLM bridge uses the sparse
policy target over candidate token ids.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F


class LossOutput(NamedTuple):
    loss: torch.Tensor  # scalar
    per_sample: torch.Tensor  # [B] detached, e.g. for priorities
    metrics: dict[str, torch.Tensor]  # detached scalars for logging


def _weighted_mean(values: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    return values.mean() if weights is None else (values * weights).mean()


def policy_cross_entropy(
    logits: torch.Tensor,  # [B, A]
    target: torch.Tensor,  # [B, A] probabilities (visit counts or Gumbel's improved policy)
    legal: torch.Tensor | None = None,  # [B, A] bool; illegal logits are excluded
    weights: torch.Tensor | None = None,  # [B] importance weights
) -> LossOutput:
    """Cross-entropy of the network's policy to the search's policy target."""
    if legal is not None:
        logits = logits.masked_fill(~legal, torch.finfo(logits.dtype).min)
    log_probs = F.log_softmax(logits, dim=-1)
    per_sample = -(target * log_probs.clamp_min(-1e9)).sum(-1)
    probs = log_probs.exp()
    entropy = -(probs * log_probs.clamp_min(-1e9)).sum(-1)
    target_entropy = -(target * target.clamp_min(1e-12).log()).sum(-1)
    metrics = {
        "policy_loss": per_sample.mean().detach(),
        "policy_entropy": entropy.mean().detach(),
        # KL(target || policy): 0 when the network already plays the search's policy.
        "policy_kl": (per_sample - target_entropy).mean().detach(),
    }
    return LossOutput(_weighted_mean(per_sample, weights), per_sample.detach(), metrics)


def sparse_policy_cross_entropy(
    logits: torch.Tensor,  # [B, V] over a whole vocabulary
    candidate_ids: torch.Tensor,  # [B, K] int64 ids of the searched candidates
    target: torch.Tensor,  # [B, K] probabilities over the candidates
    weights: torch.Tensor | None = None,
) -> LossOutput:
    """Cross-entropy to a search target given over K candidate ids out of a vocabulary of V."""
    log_probs = F.log_softmax(logits, dim=-1).gather(-1, candidate_ids)
    per_sample = -(target * log_probs).sum(-1)
    metrics = {"policy_loss": per_sample.mean().detach()}
    return LossOutput(_weighted_mean(per_sample, weights), per_sample.detach(), metrics)


def value_mse(
    value: torch.Tensor,  # [B] predicted
    target: torch.Tensor,  # [B]
    weights: torch.Tensor | None = None,
) -> LossOutput:
    """Squared error of the value head to its target (AlphaZero's game outcome z)."""
    error = value - target
    per_sample = error.square()
    metrics = {
        "value_loss": per_sample.mean().detach(),
        "value_abs_error": error.abs().mean().detach(),
    }
    return LossOutput(_weighted_mean(per_sample, weights), error.abs().detach(), metrics)


def win_probability_bins(scores: torch.Tensor, bins: int) -> torch.Tensor:
    """``[B] scores in [-1, 1] -> [B, bins]``: the win probability ``(1 + score) / 2`` as a
    two-hot over ``bins`` evenly spaced centres from 0 to 1 (its expectation is exact)."""
    position = ((scores.clamp(-1, 1) + 1) / 2) * (bins - 1)
    low = position.floor().clamp(max=bins - 2).long()
    high_weight = position - low
    target = torch.zeros(*scores.shape, bins, device=scores.device, dtype=scores.dtype)
    target.scatter_(-1, low.unsqueeze(-1), (1 - high_weight).unsqueeze(-1))
    target.scatter_add_(-1, (low + 1).unsqueeze(-1), high_weight.unsqueeze(-1))
    return target


def value_bins_cross_entropy(
    value_logits: torch.Tensor,  # [B, bins] over win probabilities 0..1
    value: torch.Tensor,  # [B] the head's expectation in [-1, 1]
    target: torch.Tensor,  # [B] in [-1, 1]
    weights: torch.Tensor | None = None,
) -> LossOutput:
    """A value head over win-probability bins: cross-entropy to the two-hot of the target."""
    bins = win_probability_bins(target, value_logits.shape[-1])
    per_sample = categorical_cross_entropy(value_logits, bins)
    error = (value - target).detach()
    metrics = {
        "value_loss": per_sample.mean().detach(),
        "value_abs_error": error.abs().mean(),
    }
    return LossOutput(_weighted_mean(per_sample, weights), error.abs(), metrics)


def categorical_cross_entropy(
    logits: torch.Tensor,  # [..., atoms]
    target: torch.Tensor,  # [..., atoms] probabilities (two-hot of a transformed scalar)
) -> torch.Tensor:
    """Per-element cross-entropy ``[...]`` of a categorical head to a distribution target."""
    return -(target * F.log_softmax(logits, dim=-1)).sum(-1)


def negative_cosine_similarity(online: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``[B, D] x [B, D] -> [B]``: EfficientZero's SimSiam consistency, the target detached."""
    return -F.cosine_similarity(online, target.detach(), dim=-1)
