"""``mbrl-decode``: decode a task split or a prompt file with one method and budget; print the
accuracy and the forward passes; write one JSON line per prompt."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from llm_bridge.adapter import check_overflow
from llm_bridge.decoding import METHODS, decode
from llm_bridge.lm_checkpoint import load_lm
from llm_bridge.step_env import StepTextEnv
from llm_bridge.tasks.countdown import Puzzle
from llm_bridge.tasks.text_tasks import TaskSplit, task_from_spec
from llm_bridge.train_text import build_env

SPLITS = ("test", "train")
ACTION_SPACES = ("tokens", "steps")


@dataclass
class DecodeCommandConfig:
    checkpoint: str = "???"  # an LM run directory (its checkpoints/last.ckpt) or checkpoint file
    method: str = "greedy"  # greedy | sample | best_of_n | beam | mcts | gumbel
    budget: int = 1  # best_of_n: n; beam: width; mcts/gumbel: simulations per decision
    split: str = "test"  # test | train (of the checkpoint's task)
    prompts: str = ""  # a file of prompts, one per line (e.g. "1 3 4 6>24:"); overrides split
    limit: int = 0  # decode only the first so many prompts; 0 = all
    temperature: float = 1.0  # sample and best_of_n
    seed: int = 0
    actions: str = "tokens"  # tokens: top-k grammar-allowed next tokens | steps: whole steps
    candidates: int = 0  # tokens: the action width (top-k); 0 = the checkpoint's
    max_new_tokens: int = 0  # 0 = the checkpoint's
    overflow: str = "error"  # a prompt longer than the model's context: error | truncate_left
    kv_cache: bool = False  # keep keys and values along the tree (faster; equal to float rounding)
    output: str = ""  # JSONL; default <run dir>/decode_<split>_<method>_<budget>.jsonl


def check(cfg: DecodeCommandConfig) -> None:
    """Refuse settings no decoding can run with, naming the key as typed."""
    for key, choices in (("method", METHODS), ("split", SPLITS), ("actions", ACTION_SPACES)):
        if getattr(cfg, key) not in choices:
            raise ValueError(
                f"{key} must be one of {' | '.join(choices)}, got {getattr(cfg, key)!r}"
            )
    check_overflow(cfg.overflow)
    for key, low in (("budget", 1), ("limit", 0), ("candidates", 0), ("max_new_tokens", 0)):
        if getattr(cfg, key) < low:
            raise ValueError(f"{key} must be >= {low}, got {getattr(cfg, key)}")
    if not cfg.temperature > 0:
        raise ValueError(f"temperature must be > 0, got {cfg.temperature}")


def read_prompts(path: Path) -> list[str]:
    """The non-empty lines of a UTF-8 text file; an error naming the file if it has none, is
    binary or cannot be read."""
    if not path.is_file():
        raise FileNotFoundError(f"prompt file {path} does not exist (prompts=FILE, one per line)")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if (not text and data) or "\x00" in text:
        raise ValueError(f"prompt file {path} is not UTF-8 text (one prompt per line)")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"prompt file {path} holds no prompts (one per line, e.g. '1 3 4 6>24:')")
    return lines


def _items(cfg: DecodeCommandConfig, split: TaskSplit) -> list:
    if cfg.prompts:
        path = Path(cfg.prompts)
        items = []
        for number, line in enumerate(read_prompts(path), 1):
            try:
                items.append(Puzzle.from_prompt(line))
            except ValueError as error:
                raise ValueError(f"{path}, prompt {number}: {error}") from None
        return items
    return split.test if cfg.split == "test" else split.train


def run_decode(cfg: DecodeCommandConfig) -> dict:
    check(cfg)
    loaded = load_lm(cfg.checkpoint)
    split = task_from_spec(loaded.task)
    items = _items(cfg, split)
    if cfg.limit > 0:
        items = items[: cfg.limit]
    trained = loaded.state.get("decoding", {})  # the width and length it was trained with
    env = build_env(
        loaded.model,
        loaded.tokenizer,
        split.task,
        candidates=cfg.candidates or trained.get("candidates", 8),
        max_new_tokens=cfg.max_new_tokens or trained.get("max_new_tokens", 40),
        overflow=cfg.overflow,
        kv_cache=cfg.kv_cache,
    )
    if cfg.actions == "steps":  # whole Countdown steps as actions, scored by the LM
        env = StepTextEnv(env.adapter, loaded.tokenizer, split.task)
    split.task.stats.reset()
    began = time.time()
    decoded = decode(
        env, items, cfg.method, budget=cfg.budget, seed=cfg.seed, temperature=cfg.temperature
    )
    seconds = time.time() - began
    output = Path(cfg.output) if cfg.output else _default_output(cfg)
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w") as file:
        for item, completion, reward in zip(
            items, decoded.completions, decoded.rewards, strict=True
        ):
            record = {
                "prompt": split.task.prompt(item),
                "completion": completion,
                "correct": bool(reward > 0),
            }
            file.write(json.dumps(record) + "\n")
    summary = {
        "method": cfg.method,
        "actions": cfg.actions,
        "budget": cfg.budget,
        "prompts": len(items),
        "accuracy": round(decoded.accuracy, 4),
        "forward_passes": decoded.forward_passes,
        "passes_per_prompt": round(decoded.forward_passes / max(1, len(items)), 1),
        "seconds": round(seconds, 1),
        "verifier": split.task.stats.summary(),  # every completion the verifier judged
        "output": str(output),
    }
    print(json.dumps(summary))
    return summary


def _default_output(cfg: DecodeCommandConfig) -> Path:
    path = Path(cfg.checkpoint)
    run_dir = path if path.is_dir() else path.parent.parent
    name = "prompts" if cfg.prompts else cfg.split
    return run_dir / f"decode_{name}_{cfg.actions}_{cfg.method}_{cfg.budget}.jsonl"
