"""The learner on several devices (``trainer.devices`` > 1, Lightning's DDP) with one replay.

Rank 0 is the learner of a one-device run: its actors play, it keeps the replay and the data
module's state, samples the global batch of ``trainer.batch_size`` and writes the checkpoints.
It hands every rank, itself included, an equal slice of that batch (`scatter_batch`). DDP
averages the slices' gradients, and this project's losses are means over the batch, so a run on
N devices takes the same gradient steps as a run on one: exactly for networks without batch
norm, and on GPUs batch norm is synchronised across devices (``sync_batchnorm``). The replay
ratio, the schedule and every other setting mean what they mean on one device.

The other ranks only train (`FollowerData`): no actors, no replay, no evaluation, nothing
written to the run directory. They hand their slice's new priorities back to rank 0, and every
decision to stop is taken together (`StopTogether`), since a rank that stopped alone would leave
the others waiting in a collective.

Lightning starts ranks 1..N-1 as copies of the command with ``LOCAL_RANK`` set (one node); the
other design, every rank with its own actors and replay, would need per-rank seeds and per-rank
data state in the checkpoint, and its batches would no longer be a single-device run's.
"""

from __future__ import annotations

import datetime
import os

import lightning as L
import torch
import torch.distributed as dist
from lightning.pytorch.strategies import DDPStrategy

from mbrl.config import TrainerConfig
from mbrl.selfplay.batch_stream import stream_loader

# Ranks 1..N-1 wait in a collective while rank 0 plays and evaluates: an evaluation against
# strong opponents takes many minutes, longer than Lightning's default 30.
COLLECTIVE_TIMEOUT = datetime.timedelta(hours=4)


def process_rank(trainer: TrainerConfig) -> int:
    """This process's rank among the learner's processes (0 with one device)."""
    if trainer.devices == 1:
        return 0
    return int(os.environ.get("LOCAL_RANK", "0"))


def is_follower(trainer: TrainerConfig) -> bool:
    """A rank > 0: a copy of the command that only trains."""
    return process_rank(trainer) > 0


def learner_strategy(trainer: TrainerConfig):
    """Lightning's strategy for ``trainer.strategy``: one device, or DDP with a long timeout.
    A static graph: the same parameters take part in every step, and some never do (the
    consistency projection of MuZero without a consistency loss), which DDP then handles
    without searching the graph for unused parameters at every step."""
    if trainer.devices == 1:
        return "auto"
    return DDPStrategy(timeout=COLLECTIVE_TIMEOUT, static_graph=True)


def syncs_batchnorm(trainer: TrainerConfig) -> bool:
    """Batch norm statistics over the global batch: torch synchronises them on GPUs only."""
    return trainer.devices > 1 and trainer.accelerator not in ("cpu",)


def slices(batch: dict[str, torch.Tensor], parts: int) -> list[dict[str, torch.Tensor]]:
    """``parts`` equal slices of a batch along its first dimension, in rank order."""
    split = {name: value.tensor_split(parts) for name, value in batch.items()}
    return [{name: pieces[rank] for name, pieces in split.items()} for rank in range(parts)]


def scatter_batch(batch: dict[str, torch.Tensor] | None, world_size: int) -> dict:
    """Rank 0 passes the global batch (the others None); every rank gets its slice."""
    received = [None]
    dist.scatter_object_list(received, None if batch is None else slices(batch, world_size), src=0)
    return received[0]


def gather_priorities(indices: torch.Tensor, errors: torch.Tensor):
    """Every rank's ``(indices, errors)``, concatenated in rank order (the global batch's)."""
    return _all_gather(indices), _all_gather(errors)


def _all_gather(tensor: torch.Tensor) -> torch.Tensor:
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, tensor.contiguous())
    return torch.cat(parts)


class FollowerData(L.LightningDataModule):
    """The data of ranks 1..N-1: slices of the batches rank 0 samples."""

    def __init__(self):
        super().__init__()
        self.world_size = 1

    def setup(self, stage: str) -> None:
        self.world_size = self.trainer.world_size

    def train_dataloader(self):
        return stream_loader(self, self.trainer.max_steps)

    def next_batch(self) -> dict[str, torch.Tensor]:
        return scatter_batch(None, self.world_size)

    def update_priorities(self, indices: torch.Tensor, errors: torch.Tensor) -> None:
        gather_priorities(indices, errors)  # rank 0 keeps them

    def stats(self) -> dict[str, float]:
        return {}


class StopTogether(L.Callback):
    """After every step, all ranks stop if any rank asked to (a signal, the training-time limit
    or perfect play on rank 0). Must come after every callback that may ask."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        trainer.should_stop = trainer.strategy.reduce_boolean_decision(
            bool(trainer.should_stop), all=False
        )
