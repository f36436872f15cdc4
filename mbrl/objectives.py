"""Training objectives: what the system optimises on a replay batch.

An objective maps ``(network, batch) -> LossOutput`` (scalar loss, per-sample errors for new
replay priorities, logged metrics) using the pure functions in ``mbrl.losses``. The system is
the same for every algorithm; AlphaZero's objective evaluates ``f(obs)`` once (K = 0). MuZero's
K-step unroll through the dynamics network and the LLM bridge's sparse candidate targets are
further objectives over their own batch layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from mbrl import losses
from mbrl.config import AlgoConfig
from mbrl.networks.support import ScalarSupport


@dataclass(frozen=True)
class AlphaZeroObjective:
    """Policy cross-entropy to the search target + value MSE to the game outcome (or, for a
    value head over win-probability bins, cross-entropy to the outcome's two-hot)."""

    policy_weight: float = 1.0
    value_weight: float = 1.0

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        output = network(batch["obs"])
        weights = batch.get("weights")
        policy = losses.policy_cross_entropy(
            output.logits, batch["policy"], batch["legal"], weights
        )
        if output.value_logits is None:
            value = losses.value_mse(output.value, batch["value"], weights)
        else:  # a head over win-probability bins (the chess transformer)
            value = losses.value_bins_cross_entropy(
                output.value_logits, output.value, batch["value"], weights
            )
        loss = self.policy_weight * policy.loss + self.value_weight * value.loss
        metrics = {**policy.metrics, **value.metrics, "loss": loss.detach()}
        return losses.LossOutput(loss, value.per_sample, metrics)


def scale_gradient(tensor: torch.Tensor, scale: float) -> torch.Tensor:
    """Identity forward; multiplies the gradient by ``scale`` backward (MuZero's 0.5 at each
    unroll step, so the dynamics' gradient does not grow with K)."""
    return tensor * scale + tensor.detach() * (1 - scale)


def _unrolled_sum(terms: list[torch.Tensor], scale: float, zero: torch.Tensor) -> torch.Tensor:
    return scale * torch.stack(terms, 0).sum(0) if terms else zero


@dataclass(frozen=True)
class MuZeroObjective:
    """MuZero's K-step unroll loss; EfficientZero adds the value prefix and consistency terms.

    From ``s_0 = h(obs_t)``, ``s_k = g(s_{k-1}, a_{t+k-1})``: policy cross-entropy to the search
    policy, categorical value cross-entropy to the n-step return, categorical reward (or value
    prefix) cross-entropy, and optionally the negative cosine similarity between the projected
    ``s_k`` and the (stop-gradient) projection of ``h(obs_{t+k})``. Unrolled steps' losses are
    scaled by ``1/K`` and the latent's gradient by 0.5 at each step, as in MuZero. Batch layout:
    ``mbrl.replay.episodes.Unroll`` as tensors. The loss weights and the value prefix's horizon
    are ``algo``'s (``*_weight``, ``value_prefix_horizon``); K is the batch's.
    """

    algo: AlgoConfig = field(default_factory=AlgoConfig)

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        algo = self.algo
        value_support = ScalarSupport(network.settings.support_size)
        reward_support = ScalarSupport(network.settings.reward_support_size)
        weights = batch["weights"]
        k_steps = batch["actions"].shape[1]
        reward_target = self._reward_targets(batch["reward"])
        latent = network.represent(batch["obs"])
        policy_logits, value_logits = network.predict(latent)
        # No legal mask, unlike AlphaZero: the search has no rules below the root, so the
        # network must learn itself that illegal actions get no policy mass (MuZero).
        root_policy = losses.policy_cross_entropy(policy_logits, batch["policy"][:, 0])
        # LossOutput.per_sample is detached (it feeds priorities): keep the graph here.
        policy_terms = [-(batch["policy"][:, 0] * torch.log_softmax(policy_logits, -1)).sum(-1)]
        value_terms = [
            losses.categorical_cross_entropy(
                value_logits, value_support.to_distribution(batch["value"][:, 0])
            )
        ]
        reward_terms, consistency_terms = [], []
        root_value = value_support.to_scalar(value_logits.detach())
        lstm = network.initial_lstm_state(len(latent), latent.device)
        for k in range(1, k_steps + 1):
            if algo.value_prefix_horizon and (k - 1) % algo.value_prefix_horizon == 0:
                lstm = network.initial_lstm_state(len(latent), latent.device)
            latent = scale_gradient(latent, 0.5)
            latent, reward_logits, lstm = network.dynamics(latent, batch["actions"][:, k - 1], lstm)
            policy_logits, value_logits = network.predict(latent)
            policy_terms.append(
                -(batch["policy"][:, k] * torch.log_softmax(policy_logits, -1)).sum(-1)
                * batch["policy_mask"][:, k]
            )
            value_terms.append(
                losses.categorical_cross_entropy(
                    value_logits, value_support.to_distribution(batch["value"][:, k])
                )
                * batch["value_mask"][:, k]
            )
            reward_terms.append(
                losses.categorical_cross_entropy(
                    reward_logits, reward_support.to_distribution(reward_target[:, k])
                )
                * batch["reward_mask"][:, k]
            )
            if algo.consistency_weight:
                with torch.no_grad():
                    target = network.project(
                        network.represent(batch["future_obs"][:, k - 1]), with_head=False
                    )
                online = network.project(latent, with_head=True)
                consistency_terms.append(
                    losses.negative_cosine_similarity(online, target) * batch["policy_mask"][:, k]
                )
        per_step = 1.0 / max(k_steps, 1)
        zero = torch.zeros_like(weights)
        policy = policy_terms[0] + _unrolled_sum(policy_terms[1:], per_step, zero)
        value = value_terms[0] + _unrolled_sum(value_terms[1:], per_step, zero)
        reward = _unrolled_sum(reward_terms, per_step, zero)
        consistency = _unrolled_sum(consistency_terms, per_step, zero)
        per_sample = (
            algo.policy_weight * policy
            + algo.value_weight * value
            + algo.reward_weight * reward
            + algo.consistency_weight * consistency
        )
        loss = (per_sample * weights).mean()
        value_error = (root_value - batch["value"][:, 0]).abs()
        metrics = {
            "loss": loss.detach(),
            "policy_loss": policy.mean().detach(),
            "value_loss": value.mean().detach(),
            "reward_loss": reward.mean().detach(),
            "value_abs_error": value_error.mean(),
            "policy_entropy": root_policy.metrics["policy_entropy"],
        }
        if algo.consistency_weight:
            metrics["consistency_loss"] = consistency.mean().detach()
        if "tree_obs" in batch:  # the tree value table (drawn uniformly: no importance weights)
            _, tree_logits = network.predict(network.represent(batch["tree_obs"]))
            tree_value = losses.categorical_cross_entropy(
                tree_logits, value_support.to_distribution(batch["tree_value"])
            ).mean()
            loss = loss + algo.tree_value_weight * tree_value
            metrics.update(loss=loss.detach(), tree_value_loss=tree_value.detach())
        return losses.LossOutput(loss, value_error, metrics)

    def _reward_targets(self, reward: torch.Tensor) -> torch.Tensor:
        """Per-step rewards, or EfficientZero's value prefix: the sum since the last reset."""
        horizon = self.algo.value_prefix_horizon
        if not horizon:
            return reward
        prefix = torch.zeros_like(reward)
        running = torch.zeros_like(reward[:, 0])
        for k in range(1, reward.shape[1]):
            if (k - 1) % horizon == 0:
                running = torch.zeros_like(running)
            running = running + reward[:, k]
            prefix[:, k] = running
        return prefix


@dataclass(frozen=True)
class StochasticMuZeroObjective:
    """Stochastic MuZero's K-step unroll loss (Antonoglou et al. 2022, section 4).

    Each step goes state -> afterstate -> state: ``as_k = phi(s_{k-1}, a_{t+k-1})``, then the
    encoder reads ``(o_{t+k-1}, o_{t+k})`` and picks a code ``c``, and ``s_k = g(as_k, c)``. The
    terms are MuZero's (policy, value, reward at every state), plus at every afterstate ``Q``'s
    cross-entropy to the value target of the state it came from (the n-step return after the
    move that was played; ``batch["q_value"]``, a return of its own horizon, where given),
    ``sigma``'s cross-entropy to the code the encoder picked (``chance_weight``) and the
    encoder's commitment to it (``commitment_weight``); in two-player games the turn-change
    logit of each step learns whether the turn passed. The dynamics' loss trains the encoder
    through the straight-through code. Scaling as in `MuZeroObjective`.
    """

    algo: AlgoConfig = field(default_factory=AlgoConfig)
    two_player: bool = False

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        from mbrl.networks.stochastic_muzero import chance_distribution_loss, commitment_loss

        algo = self.algo
        value_support = ScalarSupport(network.settings.support_size)
        reward_support = ScalarSupport(network.settings.reward_support_size)
        weights, k_steps = batch["weights"], batch["actions"].shape[1]
        value_target, policy_target = batch["value"], batch["policy"]
        q_target = batch.get("q_value", value_target)  # algo.q_td_steps: Q's own horizon
        latent = network.represent(batch["obs"])
        policy_logits, value_logits = network.predict(latent)
        root_value = value_support.to_scalar(value_logits.detach())
        terms: dict[str, list[torch.Tensor]] = {
            name: [] for name in ("policy", "value", "reward", "q", "chance", "commitment", "turn")
        }

        def state_terms(k: int, policy_logits, value_logits, mask) -> None:
            log_policy = torch.log_softmax(policy_logits, -1)
            terms["policy"].append(-(policy_target[:, k] * log_policy).sum(-1) * mask)
            value_dist = value_support.to_distribution(value_target[:, k])
            terms["value"].append(losses.categorical_cross_entropy(value_logits, value_dist) * mask)

        state_terms(0, policy_logits, value_logits, torch.ones_like(weights))
        previous_obs = batch["obs"]
        for k in range(1, k_steps + 1):
            played = batch["policy_mask"][:, k - 1]  # the move into step k was played
            arrived = batch["policy_mask"][:, k]  # and o_{t+k} is a real observation
            afterstate = network.afterstate(scale_gradient(latent, 0.5), batch["actions"][:, k - 1])
            chance_logits, q_logits = network.predict_afterstate(afterstate)
            q_dist = value_support.to_distribution(q_target[:, k - 1])
            terms["q"].append(losses.categorical_cross_entropy(q_logits, q_dist) * played)
            next_obs = batch["future_obs"][:, k - 1]
            code = network.encode_chance(previous_obs, next_obs)
            terms["chance"].append(chance_distribution_loss(chance_logits, code) * arrived)
            terms["commitment"].append(commitment_loss(code) * arrived)
            latent, reward_logits, turn_logit = network.dynamics(afterstate, code.code)
            reward_dist = reward_support.to_distribution(batch["reward"][:, k])
            reward_mask = batch["reward_mask"][:, k]
            terms["reward"].append(
                losses.categorical_cross_entropy(reward_logits, reward_dist) * reward_mask
            )
            turn = torch.nn.functional.binary_cross_entropy_with_logits(
                turn_logit, batch["turn_change"][:, k], reduction="none"
            )
            terms["turn"].append(turn * played * float(self.two_player))
            policy_logits, value_logits = network.predict(latent)
            state_terms(k, policy_logits, value_logits, arrived)
            previous_obs = next_obs
        per_step = 1.0 / max(k_steps, 1)
        zero = torch.zeros_like(weights)
        summed = {name: _unrolled_sum(found, per_step, zero) for name, found in terms.items()}
        summed["policy"] = terms["policy"][0] + _unrolled_sum(terms["policy"][1:], per_step, zero)
        summed["value"] = terms["value"][0] + _unrolled_sum(terms["value"][1:], per_step, zero)
        per_sample = (
            algo.policy_weight * summed["policy"]
            + algo.value_weight * (summed["value"] + summed["q"])
            + algo.reward_weight * (summed["reward"] + summed["turn"])
            + algo.chance_weight * summed["chance"]
            + algo.commitment_weight * summed["commitment"]
        )
        loss = (per_sample * weights).mean()
        value_error = (root_value - value_target[:, 0]).abs()
        metrics = {f"{name}_loss": total.mean().detach() for name, total in summed.items()}
        metrics.update(loss=loss.detach(), value_abs_error=value_error.mean())
        return losses.LossOutput(loss, value_error, metrics)
