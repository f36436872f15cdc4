"""Checkpoints: written atomically, checked loudly when loaded for another game or network.

A Lightning checkpoint here holds the weights, optimizer, scheduler, loop counters, the self-play
data module (replay buffer, games in progress, RNG) and the callbacks' state (evaluation history,
Elo pool); the periodic step checkpoints leave the replay buffer out. ``AtomicCheckpointIO`` writes to a temporary file in the same directory and renames it
over the target, so a run killed mid-write leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

METADATA_KEY = "mbrl"
LAST = "last.ckpt"


class AtomicCheckpointIO(TorchCheckpointIO):
    """Atomic writes; only ``last.ckpt`` (what a re-run resumes from) carries the replay buffer,
    so the periodic ``stepNNNNNN.ckpt`` files stay small (weights, optimizer, counters)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        path = Path(path)
        if path.name != LAST:
            checkpoint = {
                key: {**value, "replay": None}
                if isinstance(value, dict) and "replay" in value
                else value
                for key, value in checkpoint.items()
            }
        save_atomically(checkpoint, path)


def save_atomically(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Load a checkpoint written by ``mbrl-train``, with clear errors for the usual mistakes."""
    path = Path(path)
    if path.is_dir():  # a run directory: its latest checkpoint
        candidate = path / "checkpoints" / "last.ckpt"
        if not candidate.exists():
            raise FileNotFoundError(
                f"no checkpoint in run directory {path} (looked for {candidate})"
            )
        path = candidate
    if not path.exists():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated or foreign file
        raise ValueError(f"{path} is not a readable mbrl checkpoint: {error}") from error
    if not isinstance(checkpoint, dict) or METADATA_KEY not in checkpoint:
        raise ValueError(f"{path} is not an mbrl checkpoint (it has no {METADATA_KEY!r} section)")
    return checkpoint


def check_compatible(metadata: dict, game_spec: dict, where: str) -> None:
    """Refuse a checkpoint made for another game (name, parameters or shapes)."""
    saved = metadata["game"]
    if saved != game_spec:
        raise ValueError(
            f"{where} was trained for game {_describe(saved)}, not for {_describe(game_spec)}"
        )


def _describe(spec: dict) -> str:
    return (
        f"{spec['name']} {spec.get('params', {})} (obs {list(spec['obs_shape'])}, "
        f"{spec['num_actions']} actions)"
    )
