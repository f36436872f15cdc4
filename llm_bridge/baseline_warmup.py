"""REINFORCE's learned baseline, calibrated before the policy moves: a value-only warm-up.

`ReinforceObjective` trains the value head beside the policy, so at a round's first update the
head still judges the samples of whatever policy it last saw. From the pre-trained start it
predicts about 0.48 over the completions of the TinyLM's own samples, of which 13-15% succeed,
and with that baseline every failed sample is pushed down hard (docs/results.md, "Every method
at matched passes", where the refit is measured).
`fit_value_head` refits the head alone, a linear probe on the network's frozen features, on the
round's own samples before the round's first policy update. The policy is untouched (the
features are computed without gradients), and the baseline starts the round centred on the
current policy's success rate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from llm_bridge.examples import SequenceExample, collate

# Examples scored before and after the warm-up (its calibration record), drawn once per round.
CALIBRATION_EXAMPLES = 512


def fit_value_head(
    network: torch.nn.Module,
    examples: Sequence[SequenceExample],
    *,
    steps: int,
    batch_size: int,
    seed: int,
    lr: float = 0.01,
) -> dict[str, float]:
    """``steps`` Adam updates of ``network.value_head`` alone, on batches drawn with replacement
    (seeded) from ``examples`` with their verifier outcomes (``value``) as targets.

    Returns the calibration record of the round, on up to `CALIBRATION_EXAMPLES` of the
    examples: ``warmup_value_before`` / ``_after``, the head's mean predicted success over the
    completions' positions, beside ``warmup_success`` (their actual mean outcome), and
    ``warmup_value_loss_before`` / ``_after`` (the binary cross-entropy)."""
    scored = [e for e in examples if not np.isnan(e.value)]
    if steps < 1 or not scored:
        return {}
    rng = np.random.default_rng(seed)
    calibration = collate([scored[i] for i in rng.permutation(len(scored))[:CALIBRATION_EXAMPLES]])
    optimizer = torch.optim.Adam(network.value_head.parameters(), lr=lr)
    was_training = network.training
    network.eval()  # the features the round's first update will see (no dropout)
    try:
        with torch.no_grad():  # frozen: computed once, read before and after
            calibration_features = network.features(calibration["ids"])
        record = _calibration(network, calibration_features, calibration, "before")
        for _ in range(steps):
            batch = collate([scored[i] for i in rng.integers(0, len(scored), batch_size)])
            if not batch["value_mask"].any():  # no completion positions in this batch
                continue
            with torch.no_grad():
                features = network.features(batch["ids"])
            with torch.enable_grad():  # for the head only
                loss = F.binary_cross_entropy_with_logits(*_masked(network, features, batch))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        record.update(_calibration(network, calibration_features, calibration, "after"))
    finally:
        network.train(was_training)
    return record


def _masked(network, features, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logits, targets)`` at the batch's ``value_mask`` positions: the head is applied to
    those positions' features only (the operation the recorded figures were measured with)."""
    mask = batch["value_mask"]
    logits = network.value_head(features[mask]).squeeze(-1)
    return logits, batch["value"][:, None].expand_as(mask)[mask]


@torch.no_grad()
def _calibration(network, features, batch, when: str) -> dict[str, float]:
    logits, target = _masked(network, features, batch)
    return {
        f"warmup_value_{when}": float(torch.sigmoid(logits).mean()),
        f"warmup_value_loss_{when}": float(F.binary_cross_entropy_with_logits(logits, target)),
        "warmup_success": float(target.mean()),
    }
