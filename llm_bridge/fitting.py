"""Fit `mbrl.system.System` on a fixed list of LM examples for an exact number of gradient steps,
on the same loop as training runs (`llm_bridge.text_loop.TextRounds` with one round of
``examples``): for benchmarks and tests that train without the rounds around it."""

from __future__ import annotations

from collections.abc import Sequence

import lightning as L

from llm_bridge.examples import SequenceExample
from llm_bridge.text_loop import TextRounds
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
    if not examples or steps < 1:
        return
    data = TextRounds(
        lambda round_index: ([], {}),
        dict,
        pretraining=list(examples),
        keep_data=False,
        first_round=0,
        rounds=0,
        round_steps=lambda round_index: steps,
        batch_size=batch_size,
        seed=seed,
    )
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
    trainer.fit(system, datamodule=data)
