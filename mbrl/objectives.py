"""Training objectives: what the system optimises on a replay batch.

An objective maps ``(network, batch) -> LossOutput`` (scalar loss, per-sample errors for new
replay priorities, logged metrics) using the pure functions in ``mbrl.losses``. The system is
the same for every algorithm; AlphaZero's objective evaluates ``f(obs)`` once (K = 0). MuZero's
K-step unroll through the dynamics network and the LLM bridge's sparse candidate targets are
further objectives over their own batch layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mbrl import losses


@dataclass(frozen=True)
class AlphaZeroObjective:
    """Policy cross-entropy to the search target + value MSE to the game outcome."""

    policy_weight: float = 1.0
    value_weight: float = 1.0

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        output = network(batch["obs"])
        weights = batch.get("weights")
        policy = losses.policy_cross_entropy(
            output.logits, batch["policy"], batch["legal"], weights
        )
        value = losses.value_mse(output.value, batch["value"], weights)
        loss = self.policy_weight * policy.loss + self.value_weight * value.loss
        metrics = {**policy.metrics, **value.metrics, "loss": loss.detach()}
        return losses.LossOutput(loss, value.per_sample, metrics)
