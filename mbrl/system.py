"""The one LightningModule: an injected network and objective, optimizer and schedule from config.

``training_step`` takes a replay batch and returns the loss plus new priorities; it never steps
an environment. What is optimised lives in ``mbrl.objectives`` (AlphaZero's K = 0 today; MuZero's
K-step unroll and the LLM bridge's sparse targets are further objectives), so this module does
not change when an algorithm is added.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import lightning as L
import torch

from mbrl.checkpoint import METADATA_KEY
from mbrl.config import OptimConfig


def lr_factor(step: int, settings: OptimConfig) -> float:
    """The schedule as a pure function of the step (linear warm-up, then the schedule)."""
    if step < settings.warmup_steps:
        return (step + 1) / settings.warmup_steps
    if settings.schedule == "cosine":
        progress = min(1.0, (step - settings.warmup_steps) / max(1, settings.total_steps))
        low = settings.min_lr_ratio
        return low + (1 - low) * 0.5 * (1 + math.cos(math.pi * progress))
    if settings.schedule == "step":
        return settings.gamma ** (step // settings.step_every)
    return 1.0


class System(L.LightningModule):
    """The learner: one objective over replay batches, one optimizer and schedule.

    ``metadata`` (what eval and play need to rebuild the agent: game, network sizes, search
    settings, the config) is written into every checkpoint under ``"mbrl"``.
    """

    def __init__(
        self,
        network: torch.nn.Module,
        objective: Callable,
        optim: OptimConfig,
        *,
        metadata: dict | None = None,
    ):
        super().__init__()
        self.network = network
        self.objective = objective
        self.optim = optim
        self.metadata = metadata or {}

    def forward(self, obs: torch.Tensor):
        return self.network(obs)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int):
        loss, errors, metrics = self.objective(self.network, batch)
        self._check_loss(loss, metrics)
        if self._logs_this_step():
            metrics = {f"train/{k}": v for k, v in metrics.items()}
            metrics["train/lr"] = self.optimizers().param_groups[0]["lr"]
            self.log_dict(metrics, batch_size=len(errors))
        return {"loss": loss, "priorities": errors}

    def _logs_this_step(self) -> bool:
        """Whether Lightning writes this step's metrics (every ``log_every_n_steps`` steps).
        Each ``self.log`` key costs about half a millisecond even on steps it discards: with
        small networks that was a fifth of an update."""
        trainer = self._trainer
        if trainer is None:
            return True
        return (self.global_step + 1) % trainer.log_every_n_steps == 0 or trainer.should_stop

    def _check_loss(self, loss: torch.Tensor, metrics: dict[str, torch.Tensor]) -> None:
        """Stop before a NaN, infinite or exploding loss reaches the weights (and so before
        anything bad is checkpointed), naming the step, the term and the last good checkpoint."""
        value = float(loss.detach())
        limit = self.optim.loss_limit
        if math.isfinite(value) and (not limit or value <= limit):
            return
        terms = {k: float(v) for k, v in metrics.items() if k.endswith("_loss")}
        bad = [k for k, v in terms.items() if not math.isfinite(v)]
        culprit = bad[0] if bad else max(terms, key=lambda k: terms[k], default="loss")
        try:
            last = self.trainer.checkpoint_callback.last_model_path
        except (RuntimeError, AttributeError):  # not attached to a trainer, or no checkpoints
            last = ""
        last = last or "none written yet"
        details = ", ".join(f"{k}={v:.4g}" for k, v in terms.items())
        raise FloatingPointError(
            f"training diverged at step {self.global_step}: loss={value:.4g} (limit "
            f"{limit:g}, optim.loss_limit); offending term: {culprit} ({details}). Last good "
            f"checkpoint: {last}. Lower optim.lr (or optim.grad_clip) and train from it."
        )

    def restart_optimizer(self) -> None:
        """The optimizer's state and the schedule from their start, as a new fit would begin
        (the LM rounds' default between rounds: `llm_bridge.text_loop`)."""
        for optimizer in self.trainer.optimizers:
            optimizer.state.clear()
        for config in self.trainer.lr_scheduler_configs:
            scheduler = config.scheduler
            scheduler.last_epoch = 0
            groups = zip(
                scheduler.optimizer.param_groups,
                scheduler.base_lrs,
                scheduler.lr_lambdas,
                strict=True,
            )
            for group, base, factor in groups:
                group["lr"] = base * factor(0)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint[METADATA_KEY] = self.metadata

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        # Runs before Lightning restores the data module, which it finds under its class name:
        # learned-model runs saved before one self-play stack used another.
        if "LatentSelfPlayDataModule" in checkpoint:
            checkpoint["SelfPlayDataModule"] = checkpoint.pop("LatentSelfPlayDataModule")

    def configure_optimizers(self):
        params = self.network.parameters()
        settings = self.optim
        if settings.optimizer == "sgd":
            optimizer = torch.optim.SGD(
                params,
                settings.lr,
                momentum=settings.momentum,
                weight_decay=settings.weight_decay,
            )
        elif settings.optimizer == "adam":
            optimizer = torch.optim.Adam(params, settings.lr, weight_decay=settings.weight_decay)
        else:
            optimizer = torch.optim.AdamW(params, settings.lr, weight_decay=settings.weight_decay)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: lr_factor(step, settings)
        )
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }
