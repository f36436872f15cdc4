"""LM objectives on `llm_bridge.examples` batches, for `mbrl.system.System`.

Same contract as `mbrl.objectives`: ``(network, batch) -> LossOutput``. ``LMObjective`` is
K = 0 MuZero/AlphaZero for a language model: policy cross-entropy to a target over candidate
token ids (the search's improved policy, or the next token when pre-training) plus the value
head's binary cross-entropy to the verifier's outcome. ``GRPOObjective`` is the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mbrl import losses


@dataclass(frozen=True)
class LMObjective:
    policy_weight: float = 1.0
    value_weight: float = 0.5

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        heads = network(batch["ids"])
        mask = batch["target_mask"]
        policy = losses.sparse_policy_cross_entropy(
            heads.logits[mask], batch["candidates"][mask], batch["policy"][mask]
        )
        loss = self.policy_weight * policy.loss
        metrics = dict(policy.metrics)
        value_mask = batch["value_mask"]
        if value_mask.any():
            target = batch["value"][:, None].expand_as(value_mask)[value_mask]
            predicted = heads.value_logit[value_mask]
            value_loss = F.binary_cross_entropy_with_logits(predicted, target)
            loss = loss + self.value_weight * value_loss
            metrics["value_loss"] = value_loss.detach()
            metrics["value_accuracy"] = ((predicted > 0) == (target > 0.5)).float().mean()
        metrics["loss"] = loss.detach()
        # Priorities are unused (LM data is not prioritized); one number per sequence.
        per_sequence = torch.zeros(len(batch["ids"]))
        return losses.LossOutput(loss, per_sequence, metrics)


def sampled_log_probs(logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``[B, T]`` log-probability of the sampled token (the first candidate) at each position."""
    chosen = batch["candidates"][..., 0]
    return torch.log_softmax(logits, -1).gather(-1, chosen[..., None]).squeeze(-1)


@dataclass(frozen=True)
class GRPOObjective:
    """Group-relative policy optimisation (Shao et al. 2024, DeepSeekMath): the clipped
    surrogate of PPO with the group-normalised verifier reward as every token's advantage,
    averaged over each sequence's tokens. No KL penalty (beta = 0, as in DAPO/Dr. GRPO).

    ``dual_clip`` (Ye et al. 2020, dual-clip PPO; 0 = off): with a negative advantage the
    clipped surrogate is unbounded in the ratio, and a token whose probability rose far above
    the sampling policy's (through updates to other sequences) can blow the loss up; the term
    is bounded below by ``dual_clip * advantage``."""

    clip: float = 0.2
    dual_clip: float = 0.0

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        heads = network(batch["ids"])
        mask = batch["target_mask"]
        log_prob = sampled_log_probs(heads.logits, batch)
        ratio = torch.exp(log_prob - batch["old_log_prob"])
        advantage = batch["advantage"][:, None]
        surrogate = torch.minimum(
            ratio * advantage, ratio.clamp(1 - self.clip, 1 + self.clip) * advantage
        )
        if self.dual_clip > 0:
            bounded = torch.maximum(surrogate, self.dual_clip * advantage)
            surrogate = torch.where(advantage < 0, bounded, surrogate)
        tokens = mask.sum(1).clamp_min(1)
        per_sequence = -(surrogate * mask).sum(1) / tokens
        loss = per_sequence.mean()
        metrics = {
            "loss": loss.detach(),
            "policy_loss": loss.detach(),
            "clip_fraction": ((ratio - 1).abs() > self.clip)[mask].float().mean().detach(),
            "mean_advantage_abs": batch["advantage"].abs().mean(),
        }
        return losses.LossOutput(loss, per_sequence.detach(), metrics)


@dataclass(frozen=True)
class RoundObjective:
    """Pre-training's objective on pre-training batches (``batch["pretraining"]``, set by
    `llm_bridge.text_loop.TextRounds`), the algorithm's on the rounds after it."""

    rounds: LMObjective | GRPOObjective
    pretraining: LMObjective = LMObjective()

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        pretraining = bool(batch.get("pretraining", torch.tensor(False)))
        return (self.pretraining if pretraining else self.rounds)(network, batch)
