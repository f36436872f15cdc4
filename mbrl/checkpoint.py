"""Checkpoints: written atomically, loaded without running code, checked loudly when loaded for
another game or network.

A Lightning checkpoint here holds the weights, optimizer, scheduler, loop counters, the self-play
data module (replay buffer, games in progress, RNG) and the callbacks' state (evaluation history,
Elo pool); the periodic step checkpoints leave the replay buffer out. ``AtomicCheckpointIO``
writes to a temporary file in the same directory and renames it over the target, so a run killed
mid-write leaves the previous checkpoint intact.

Every load goes through `load_safely`: ``torch.load(weights_only=True)``, which accepts tensors
and plain values (numbers, strings, lists, dicts) and refuses any other Python object, because
unpickling one can run arbitrary code: a crafted file must not run a command on the machine of
whoever evaluates it. Everything this project saves is made of plain values for that reason.
"""

from __future__ import annotations

import os
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from mbrl.atomic_file import remove_temporaries, write_atomically

METADATA_KEY = "mbrl"
LAST = "last.ckpt"
STEP_PATTERN = "step*.ckpt"  # ModelCheckpoint's filename="step{step:06d}"


class UnsafeCheckpointError(ValueError):
    """A file holding Python objects other than tensors and plain values."""


class CorruptCheckpointError(ValueError):
    """A file that is not a complete checkpoint (truncated, overwritten, another format)."""


def load_safely(path: str | os.PathLike, map_location: Any = "cpu", mmap: bool = False) -> Any:
    """``torch.load(path, weights_only=True)``, with one clear error per way it can fail.
    mmap: map the tensors' storage instead of reading it (cheap structure checks)."""
    path = Path(path)
    if not mmap:
        _check_checksums(path)
    try:
        return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except FileNotFoundError:
        raise
    except pickle.UnpicklingError as error:
        found = re.search(r"GLOBAL (\S+)", str(error))
        if found is None:  # not an object torch refused: bytes that are no pickle at all
            raise CorruptCheckpointError(
                f"{path} is not a readable checkpoint (truncated or corrupt)"
            ) from None
        raise UnsafeCheckpointError(
            f"{path} holds a Python object ({found[1]}) other than tensors and plain values; "
            "it is refused because loading such an object can run arbitrary code"
        ) from None
    except Exception as error:  # truncated zip, foreign bytes: torch raises many types
        reason = str(error).strip().split(". ")[0].splitlines()[0] if str(error).strip() else ""
        detail = f": {reason}" if len(reason) > 8 else ""  # not KeyError's bare "101"
        raise CorruptCheckpointError(
            f"{path} is not a readable checkpoint (truncated or corrupt{detail})"
        ) from None


def _check_checksums(path: Path) -> None:
    """A checkpoint is a zip whose entries carry CRC-32s, which torch does not verify: bytes
    flipped inside a tensor would load as quietly wrong weights. Reading them all back costs
    about a second per GB."""
    try:
        if not zipfile.is_zipfile(path):
            return  # not torch's zip format: torch.load says what it is
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError):
        return  # a damaged directory: torch.load's own error is the clearer one
    if damaged is not None:
        raise CorruptCheckpointError(
            f"{path} is corrupt: its entry {damaged.split('/', 1)[-1]} does not match its checksum"
        )


# The data module's replays (episodes; the search trees' value targets): last.ckpt only.
REPLAY_KEYS = frozenset({"replay", "tree_values"})


class AtomicCheckpointIO(TorchCheckpointIO):
    """Atomic writes and safe loads; only ``last.ckpt`` (what a re-run resumes from) carries the
    replay buffers, so the periodic ``stepNNNNNN.ckpt`` files stay small (weights, optimizer,
    counters)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options=None) -> None:
        path = Path(path)
        if path.name != LAST:
            checkpoint = {
                key: {**value, **dict.fromkeys(REPLAY_KEYS & value.keys())}
                if isinstance(value, dict) and "replay" in value
                else value
                for key, value in checkpoint.items()
            }
        save_atomically(checkpoint, path)

    def load_checkpoint(self, path, map_location=None, weights_only=None) -> dict[str, Any]:
        del weights_only  # always True, whatever a caller asks
        return load_safely(path, map_location=map_location or "cpu")


def save_atomically(obj: Any, path: Path) -> None:
    write_atomically(path, lambda tmp: torch.save(obj, tmp))


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Load a checkpoint written by ``mbrl-train``, with clear errors for the usual mistakes."""
    path = Path(path)
    if path.is_dir():  # a run directory: its latest checkpoint
        candidate = path / "checkpoints" / LAST
        if not candidate.exists():
            raise FileNotFoundError(
                f"no checkpoint in run directory {path} (looked for {candidate})"
            )
        path = candidate
    if not path.exists():
        if path.is_symlink():
            raise FileNotFoundError(f"checkpoint {path} is a symbolic link to nothing (or a loop)")
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    checkpoint = load_safely(path)
    if not isinstance(checkpoint, dict) or METADATA_KEY not in checkpoint:
        raise ValueError(f"{path} is not an mbrl checkpoint (it has no {METADATA_KEY!r} section)")
    return checkpoint


def resumable(directory: Path) -> tuple[Path | None, list[str]]:
    """The newest checkpoint in ``directory`` that loads (``last.ckpt``, else the step
    checkpoints from the newest), and one line per newer one that did not."""
    steps = sorted(Path(directory).glob(STEP_PATTERN), reverse=True)
    problems = []
    for path in [Path(directory) / LAST, *steps]:
        if not path.exists():
            continue
        try:
            load_checkpoint_lazily(path)
        except ValueError as error:
            problems.append(str(error))
            continue
        return path, problems
    return None, problems


def load_checkpoint_lazily(path: Path) -> None:
    """Read ``path``'s structure without reading its tensors (memory-mapped): cheap enough to
    vet a multi-gigabyte replay buffer before Lightning loads it for real."""
    checkpoint = load_safely(path, mmap=True)
    if not isinstance(checkpoint, dict) or METADATA_KEY not in checkpoint:
        raise CorruptCheckpointError(f"{path} is not an mbrl checkpoint")


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


def resume_point(checkpoints: Path, *, resume: bool, say, fallback: str = "") -> Path | None:
    """The checkpoint a re-run continues from: ``last.ckpt``, or where it is unreadable
    (truncated, corrupt) the newest step checkpoint that loads, saying which (``fallback``
    says what that means for the run). Temporary files of a killed write are removed first;
    ``resume=False`` resumes from nothing."""
    for leftover in remove_temporaries(checkpoints) if checkpoints.is_dir() else []:
        say(f"removed {leftover}, left by an interrupted checkpoint write")
    if not resume:
        return None
    path, problems = resumable(checkpoints)
    for problem in problems:
        say(f"{problem}; not resuming from it")
    if path is not None and path.name != LAST:
        say(f"resuming from {path}, the newest checkpoint that loads{fallback}")
    return path


def network_weights(checkpoint: dict) -> dict:
    """The ``System``'s network weights from a Lightning checkpoint, without the prefix."""
    return {
        key.removeprefix("network."): value
        for key, value in checkpoint["state_dict"].items()
        if key.startswith("network.")
    }
