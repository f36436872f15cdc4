"""LM checkpoints: the weights plus what is needed to rebuild model, tokenizer and task.

Written atomically (`mbrl.checkpoint.save_atomically`), so a run killed mid-write keeps the
previous round's checkpoint. Everything is saved as tensors and plain values (the data pool as
dicts), and ``load_lm`` reads with `mbrl.checkpoint.load_safely` (``weights_only=True``), so a
crafted file cannot run code; it fails loudly on a missing file or a checkpoint of another kind.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, NamedTuple

from llm_bridge.examples import SequenceExample
from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.tokenizer import CharTokenizer
from mbrl.checkpoint import load_safely, save_atomically

KIND = "llm_bridge.tiny_lm"


class LoadedLM(NamedTuple):
    model: TinyLM
    tokenizer: CharTokenizer
    task: dict  # {"name": ..., "params": {...}, "test_fraction": ..., "seed": ...}
    state: dict  # everything else that was saved (round, results, ...)


def save_lm(path: Path, model: TinyLM, tokenizer: CharTokenizer, task: dict, **state: Any) -> None:
    """``state`` holds plain values; a ``pool`` of `SequenceExample` is stored as dicts."""
    if "pool" in state:
        state["pool"] = [dataclasses.asdict(example) for example in state["pool"]]
    save_atomically(
        {
            "kind": KIND,
            "settings": dataclasses.asdict(model.settings),
            "alphabet": tokenizer.alphabet,
            "task": task,
            "model": model.state_dict(),
            **state,
        },
        Path(path),
    )


def load_lm(path: str | Path) -> LoadedLM:
    path = Path(path)
    if path.is_dir():  # a run directory: its last checkpoint
        path = path / "checkpoints" / "last.pt"
    if not path.is_file():
        raise FileNotFoundError(
            f"no LM checkpoint at {path}; train one with e.g. `mbrl-train "
            "experiment=countdown_pretrain` and pass its run directory or .pt file"
        )
    saved = load_safely(path)
    if not isinstance(saved, dict) or saved.get("kind") != KIND:
        raise ValueError(f"{path} is not an llm_bridge LM checkpoint (kind {KIND!r})")
    model = TinyLM(TinyLMSettings(**saved["settings"]))
    model.load_state_dict(saved["model"])
    state = {
        k: v for k, v in saved.items() if k not in ("kind", "settings", "alphabet", "task", "model")
    }
    if "pool" in state:
        state["pool"] = [SequenceExample(**example) for example in state["pool"]]
    return LoadedLM(model, CharTokenizer(saved["alphabet"]), saved["task"], state)
