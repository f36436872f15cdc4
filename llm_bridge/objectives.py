"""LM objectives on `llm_bridge.examples` batches, for `mbrl.system.System`.

Same contract as `mbrl.objectives`: ``(network, batch) -> LossOutput``. ``LMObjective`` is
K = 0 MuZero/AlphaZero for a language model: policy cross-entropy to a target over candidate
token ids (the search's improved policy, or the next token when pre-training) plus the value
head's binary cross-entropy to the verifier's outcome. ``GRPOObjective`` and
``ReinforceObjective`` are the policy-gradient baselines; both log the variance of their
gradient estimate (`policy_gradient_variance`), so what a baseline buys is measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mbrl import losses


def value_loss(heads, batch: dict[str, torch.Tensor]) -> torch.Tensor | None:
    """The value head's binary cross-entropy to each sequence's ``value`` (the verifier's
    outcome) at its ``value_mask`` positions; None when the batch has none."""
    mask = batch["value_mask"]
    if not mask.any():
        return None
    target = batch["value"][:, None].expand_as(mask)[mask]
    return F.binary_cross_entropy_with_logits(heads.value_logit[mask], target)


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
        value = value_loss(heads, batch)
        if value is not None:
            loss = loss + self.value_weight * value
            metrics["value_loss"] = value.detach()
            mask = batch["value_mask"]
            predicted, target = heads.value_logit[mask], batch["value"][:, None].expand_as(mask)
            metrics["value_accuracy"] = ((predicted > 0) == (target[mask] > 0.5)).float().mean()
        metrics["loss"] = loss.detach()
        # Priorities are unused (LM data is not prioritized); one number per sequence.
        per_sequence = torch.zeros(len(batch["ids"]))
        return losses.LossOutput(loss, per_sequence, metrics)


def sampled_log_probs(logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``[B, T]`` log-probability of the sampled token (the first candidate) at each position."""
    chosen = batch["candidates"][..., 0]
    return torch.log_softmax(logits, -1).gather(-1, chosen[..., None]).squeeze(-1)


def policy_gradient_variance(
    logits: torch.Tensor, batch: dict[str, torch.Tensor], advantage: torch.Tensor
) -> torch.Tensor:
    """The variance over sequences of each one's policy-gradient estimate, restricted to the
    gradient with respect to the logits summed over positions (exactly the gradient of an
    output bias), as the trace of its covariance: ``mean_i ||g_i - mean g||^2`` with
    ``g_i = sum_t advantage[i, t] * (softmax(logits[i, t]) - onehot(sampled[i, t])) / T_i``.

    The per-sequence gradient of a whole network would cost a backward pass per sequence;
    this one is closed-form and moves with the full one as advantages change (the estimate a
    baseline is meant to steady). ``advantage [B, T]``, zero off ``target_mask``."""
    mask = batch["target_mask"]
    chosen = F.one_hot(batch["candidates"][..., 0], logits.shape[-1]).to(logits.dtype)
    weights = (advantage * mask) / mask.sum(1, keepdim=True).clamp_min(1)
    per_sequence = torch.einsum("bt,btv->bv", weights, logits.detach().softmax(-1) - chosen)
    return (per_sequence - per_sequence.mean(0)).pow(2).sum(1).mean()


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
            "gradient_variance": policy_gradient_variance(
                heads.logits, batch, advantage.expand_as(mask)
            ),
        }
        return losses.LossOutput(loss, per_sequence.detach(), metrics)


REINFORCE_BASELINES = ("value", "group_mean", "none")


@dataclass(frozen=True)
class ReinforceObjective:
    """REINFORCE (Williams 1992) with a baseline: ``-sum_t (R - b_t) log pi(a_t)`` averaged over
    each sequence's tokens, on-policy (no ratio, no clipping), plus the value head's binary
    cross-entropy to the verifier's reward ``R`` (the batch's ``value``).

    ``baseline``: ``value``, the value head's success probability at each prefix, a learned
    per-token baseline (detached: it only centres the advantage); ``group_mean``, the mean
    reward of the prompt's samples (`llm_bridge.rounds.reinforce_examples` puts ``R - mean``
    in ``advantage``); ``none``, ``R`` itself. ``gradient_variance`` shows what each buys."""

    baseline: str = "value"
    value_weight: float = 0.5

    def __post_init__(self):
        if self.baseline not in REINFORCE_BASELINES:
            raise ValueError(
                f"REINFORCE baseline must be one of {REINFORCE_BASELINES}, got {self.baseline!r}"
            )

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        heads = network(batch["ids"])
        mask = batch["target_mask"]
        log_prob = sampled_log_probs(heads.logits, batch)
        if self.baseline == "value":  # the value at position t judges the prefix ids[: t + 1]
            reward = batch["value"][:, None]
            advantage = reward - torch.sigmoid(heads.value_logit).detach()
        else:
            advantage = batch["advantage"][:, None].expand_as(log_prob)
        advantage = advantage * mask
        tokens = mask.sum(1).clamp_min(1)
        per_sequence = -(advantage * log_prob).sum(1) / tokens
        policy_loss = per_sequence.mean()
        value = value_loss(heads, batch)
        if value is None:
            value = heads.value_logit.sum() * 0.0
        loss = policy_loss + self.value_weight * value
        metrics = {
            "loss": loss.detach(),
            "policy_loss": policy_loss.detach(),
            "value_loss": value.detach(),
            "mean_advantage_abs": (advantage.abs().sum() / mask.sum().clamp_min(1)).detach(),
            "gradient_variance": policy_gradient_variance(heads.logits, batch, advantage),
        }
        return losses.LossOutput(loss, per_sequence.detach(), metrics)


DIVERGENCES = ("reverse_kl", "forward_kl", "jsd")
TEACHER_FLOOR = 1e-3  # uniform mass mixed into the teacher, so reverse KL stays finite


def candidate_divergence(
    student_logits: torch.Tensor,
    teacher: torch.Tensor,
    valid: torch.Tensor,
    kind: str,
    beta: float = 0.5,
) -> torch.Tensor:
    """Per decision ``[N]``: the divergence between the student's distribution over the
    candidates (its logits ``[N, K]`` renormalised over the ``valid`` ones) and the teacher's
    ``[N, K]``, exactly over the candidate set. ``reverse_kl`` is KL(student || teacher), mode
    seeking, the on-policy distillation objective; ``forward_kl`` is KL(teacher || student),
    which is cross-entropy up to a constant; ``jsd`` is GKD's generalised Jensen-Shannon,
    ``beta KL(teacher || m) + (1 - beta) KL(student || m)`` with ``m = beta teacher + (1 - beta)
    student`` (0 < beta < 1). The teacher is floored (``TEACHER_FLOOR``) so a candidate a
    search never visited does not make reverse KL infinite."""
    counts = valid.sum(-1, keepdim=True).clamp_min(1)
    # A finite fill: -inf would give 0 * inf = NaN in the gradient of the padded slots.
    log_q = torch.log_softmax(student_logits.float().masked_fill(~valid, -1e9), -1)
    p = (1 - TEACHER_FLOOR) * teacher + TEACHER_FLOOR * valid / counts
    p = torch.where(valid, p / p.sum(-1, keepdim=True), 0.0)
    log_p = torch.log(p.clamp_min(1e-30))
    q = log_q.exp()

    def kl(a, log_a, log_b):
        return torch.where(valid, a * (log_a - log_b), 0.0).sum(-1)

    if kind == "reverse_kl":
        return kl(q, log_q, log_p)
    if kind == "forward_kl":
        return kl(p, log_p, log_q)
    if kind == "jsd":
        log_m = torch.log((beta * p + (1 - beta) * q).clamp_min(1e-30))
        return beta * kl(p, log_p, log_m) + (1 - beta) * kl(q, log_q, log_m)
    raise ValueError(f"divergence must be one of {DIVERGENCES}, got {kind!r}")


@dataclass(frozen=True)
class OnPolicyDistillObjective:
    """On-policy distillation (`llm_bridge.on_policy`): at every decision of the student's own
    samples, ``divergence`` between the student and the teacher over the decision's
    candidates (`candidate_divergence`), averaged over decisions; plus the value head's binary
    cross-entropy to each sample's reward."""

    divergence: str = "reverse_kl"
    beta: float = 0.5  # jsd only
    value_weight: float = 0.5

    def __post_init__(self):
        if self.divergence not in DIVERGENCES:
            raise ValueError(f"divergence must be one of {DIVERGENCES}, got {self.divergence!r}")
        if not 0 < self.beta < 1:
            raise ValueError(f"the JSD's beta must be in (0, 1), got {self.beta}")

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        heads = network(batch["ids"])
        mask = batch["target_mask"]
        candidates = batch["candidates"][mask]
        student = heads.logits[mask].gather(-1, candidates)
        valid = batch["candidate_mask"][mask]
        divergence = candidate_divergence(
            student, batch["policy"][mask], valid, self.divergence, self.beta
        )
        policy_loss = divergence.mean()
        loss = policy_loss
        metrics = {"policy_loss": policy_loss.detach(), self.divergence: policy_loss.detach()}
        value = value_loss(heads, batch)
        if value is not None:
            loss = loss + self.value_weight * value
            metrics["value_loss"] = value.detach()
        metrics["loss"] = loss.detach()
        return losses.LossOutput(loss, torch.zeros(len(batch["ids"])), metrics)


@dataclass(frozen=True)
class RoundObjective:
    """Pre-training's objective on pre-training batches (``batch["pretraining"]``, set by
    `llm_bridge.text_loop.TextRounds`), the algorithm's on the rounds after it."""

    rounds: LMObjective | GRPOObjective | ReinforceObjective | OnPolicyDistillObjective
    pretraining: LMObjective = LMObjective()

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        pretraining = bool(batch.get("pretraining", torch.tensor(False)))
        return (self.pretraining if pretraining else self.rounds)(network, batch)
