"""Reading an LM back: the weights plus what is needed to rebuild model, tokenizer and task.

`train_text` writes the core's checkpoint (``last.ckpt``: `mbrl.system.System` with the LM's
metadata, the data module's rounds); runs made before it wrote one ``last.pt`` dict, which is
still read. ``load_lm`` reads with `mbrl.checkpoint.load_safely` (``weights_only=True``), so a
crafted file cannot run code; it fails loudly on a missing file or a checkpoint of another kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from llm_bridge.examples import SequenceExample
from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.tokenizer import CharTokenizer
from mbrl.checkpoint import LAST, METADATA_KEY, load_safely, network_weights

KIND = "llm_bridge.tiny_lm"
ROUNDS_STATE = "TextRounds"  # where Lightning keeps the rounds' state (the data module's name)


class LoadedLM(NamedTuple):
    model: TinyLM
    tokenizer: CharTokenizer
    task: dict  # {"name": ..., "params": {...}, "test_fraction": ..., "seed": ...}
    state: dict  # everything else that was saved (round, results, ...)


def load_lm(path: str | Path) -> LoadedLM:
    """An LM from a run directory (its ``checkpoints/last.ckpt``), a ``.ckpt`` file of the
    core's format (what `train_text` writes: the metadata says what to rebuild), or a ``.pt``
    file of the format before it (one dict; still read, for runs made then)."""
    path = Path(path)
    if path.is_dir():  # a run directory: its last checkpoint
        checkpoints = path / "checkpoints"
        path = checkpoints / LAST
        if not path.is_file() and (checkpoints / "last.pt").is_file():
            path = checkpoints / "last.pt"
    if not path.is_file():
        raise FileNotFoundError(
            f"no LM checkpoint at {path}; train one with e.g. `mbrl-train "
            "experiment=countdown_pretrain` and pass its run directory or checkpoint file"
        )
    saved = load_safely(path)
    if isinstance(saved, dict) and isinstance(saved.get(METADATA_KEY), dict):
        return _from_core_checkpoint(saved, path)
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


def _from_core_checkpoint(saved: dict, path: Path) -> LoadedLM:
    metadata = saved[METADATA_KEY]
    if metadata.get("kind") != KIND:
        game = (
            metadata.get("game", {}).get("name") if isinstance(metadata.get("game"), dict) else None
        )
        held = f"an agent for the game {game!r}" if game else f"kind {metadata.get('kind')!r}"
        raise ValueError(
            f"{path} holds {held}, not a language model (evaluate or play it with mbrl-eval "
            "or mbrl-play)"
        )
    model = TinyLM(TinyLMSettings(**metadata["settings"]))
    model.load_state_dict(network_weights(saved))
    rounds = saved.get(ROUNDS_STATE, {})
    history = list(rounds.get("history", []))
    state = {
        "round": history[-1]["round"] if history else -1,  # the last completed round
        "history": history,
        "decoding": metadata.get("decoding", {}),
        "algo": metadata.get("algo"),
    }
    return LoadedLM(model, CharTokenizer(metadata["alphabet"]), metadata["task"], state)
