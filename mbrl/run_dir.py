"""The run directory: one experiment per directory, entered only once the run can start.

``experiment.json`` marks a directory as an mbrl run and records the settings that define its
experiment. `check_run_dir` (read only) refuses a directory that holds another experiment before
anything is built; `claim_run_dir` writes the marker only after every part was built, so a start
that fails (an unsupported game, a bad value) leaves the directory as it was and the corrected
command runs; so does one that failed after the claim but before it wrote anything a resume
could continue from (`holds_work`). ``overwrite=true`` deletes only what this project writes,
and only in a directory that holds a run: never a file of the user's.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from mbrl.config import RESUMABLE_CHANGES, TrainConfig

EXPERIMENT_FILE = "experiment.json"
# What a run writes, relative to its directory (glob patterns); `clear_run` deletes these only.
RUN_FILES = (
    "checkpoints/last.ckpt",
    "checkpoints/step*.ckpt",
    "checkpoints/last.pt",
    "checkpoints/.*.tmp",
    "tb/**/events.out.tfevents.*",
    "tb/**/hparams.yaml",
    "eval.jsonl",
    "eval_results.json",
    "rounds.jsonl",
    EXPERIMENT_FILE,
)
RUN_FOLDERS = ("checkpoints", "tb")  # removed when nothing else is left in them


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key != "params":
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def identity(cfg: TrainConfig) -> dict:
    """The settings that define an experiment (everything a resume may not change)."""
    flat = _flatten(dataclasses.asdict(cfg))
    return {
        k: v
        for k, v in flat.items()
        if not any(k == c or k.startswith(f"{c}.") for c in RESUMABLE_CHANGES)
    }


def check_run_dir(cfg: TrainConfig) -> Path:
    """``cfg.run_dir``, after refusing one that holds another experiment (unless overwrite)."""
    run_dir = Path(cfg.run_dir)
    marker = run_dir / EXPERIMENT_FILE
    if run_dir.exists() and not run_dir.is_dir():
        raise NotADirectoryError(f"run_dir={run_dir} is a file, not a directory")
    if not marker.exists() or cfg.overwrite or not holds_work(run_dir):
        return run_dir
    try:
        saved = json.loads(marker.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(
            f"{marker} is unreadable ({error}); choose another run_dir=..., or pass "
            "overwrite=true to start afresh there"
        ) from None
    current = identity(cfg)
    defaults = identity(TrainConfig())  # a key added after the run was made reads as its default
    for key in current.keys() - saved.keys():
        if key in defaults:
            saved[key] = defaults[key]
    changed = sorted(k for k in saved.keys() | current.keys() if saved.get(k) != current.get(k))
    if changed:
        details = ", ".join(f"{k}: {saved.get(k)!r} -> {current.get(k)!r}" for k in changed)
        raise ValueError(
            f"run directory {run_dir} holds another experiment ({details}). Choose another "
            f"run_dir=..., or pass overwrite=true to delete it and start afresh."
        )
    return run_dir


# What a resume would continue from: a start that failed before writing any of these (a bad
# value met at the first search, say) left only its marker, and the corrected command may
# enter the directory as a new experiment.
WORK_FILES = ("checkpoints/*.ckpt", "checkpoints/last.pt", "eval.jsonl", "rounds.jsonl")


def holds_work(run_dir: Path) -> bool:
    return any(any(Path(run_dir).glob(pattern)) for pattern in WORK_FILES)


def clear_run(run_dir: Path) -> list[Path]:
    """Delete what a run wrote in ``run_dir`` (`RUN_FILES`), if it holds a run; returns the
    deleted files. Anything else stays, and so do folders that still hold it."""
    run_dir = Path(run_dir)
    if not (run_dir / EXPERIMENT_FILE).is_file():
        return []
    deleted = sorted({path for pattern in RUN_FILES for path in run_dir.glob(pattern)})
    for path in deleted:
        if path.is_file() or path.is_symlink():
            path.unlink()
    for folder in RUN_FOLDERS:
        # Deepest first, so that emptied sub-folders (tb/round1) go before their parents.
        for sub in sorted((run_dir / folder).glob("**/"), key=lambda p: -len(p.parts)):
            if sub.is_dir() and not any(sub.iterdir()):
                sub.rmdir()
    return deleted


def claim_run_dir(cfg: TrainConfig) -> Path:
    """Enter ``cfg.run_dir`` for this experiment (after `check_run_dir` and after every part
    was built): clear it first with ``overwrite=true``, then write the marker."""
    run_dir = check_run_dir(cfg)
    if cfg.overwrite or not holds_work(run_dir):
        clear_run(run_dir)  # also what a failed start left (its marker, its TensorBoard files)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / EXPERIMENT_FILE).write_text(json.dumps(identity(cfg), indent=1, sort_keys=True))
    return run_dir
