"""Fit `mbrl.system.System` on a list of LM examples for an exact number of gradient steps."""

from __future__ import annotations

from collections.abc import Sequence

import lightning as L
import torch
from torch.utils.data import DataLoader, RandomSampler

from llm_bridge.examples import SequenceExample, collate
from mbrl.quiet import quiet_third_party
from mbrl.system import System


def fit(
    system: System,
    examples: Sequence[SequenceExample],
    *,
    steps: int,
    batch_size: int,
    seed: int,
    logger=False,
    progress_bar: bool = False,
    accelerator: str = "cpu",
) -> None:
    """``steps`` updates on batches drawn with replacement from ``examples`` (a seeded order)."""
    if not examples:
        return
    generator = torch.Generator().manual_seed(seed)
    sampler = RandomSampler(
        examples, replacement=True, num_samples=steps * batch_size, generator=generator
    )
    loader = DataLoader(list(examples), batch_size=batch_size, sampler=sampler, collate_fn=collate)
    quiet_third_party()
    trainer = L.Trainer(
        max_steps=steps,
        accelerator=accelerator,
        devices=1,
        logger=logger,
        enable_checkpointing=False,
        enable_progress_bar=progress_bar,
        enable_model_summary=False,
        gradient_clip_val=system.optim.grad_clip or None,
        log_every_n_steps=max(1, min(50, steps // 4)),
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    trainer.fit(system, train_dataloaders=loader)
