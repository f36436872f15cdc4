"""A small learned reward model: a bidirectional encoder (the project's own transformer blocks,
without the causal mask) that reads a prompt and a (partial) completion and gives the
probability that it is good, trained on labels the Countdown solver gives for free:

- a partial solution, cut after a complete step: can its numbers still make the target?
- a finished completion (ending in ``<eos>``): is it correct?

It stands in for the exact verifier where none exists (as a search's judge, or best-of-N's
scorer); `labelled_examples` builds its data, `RewardObjective` trains it on the core's System
(`llm_bridge.fitting.fit`), `classification_report` measures it against the exact labels.
A judge under search meets its own mistakes more often the harder it is optimised against; two
defences live here: `RewardEnsemble` (several models, the most pessimistic one decides) and
`calibrated_threshold` (accept only where the judge is right often enough at that score).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from llm_bridge.examples import SequenceExample
from llm_bridge.tasks.countdown import (
    Puzzle,
    apply_step,
    completion_numbers,
    legal_step_mask,
    reachable,
    solutions,
    step_action_width,
    verify,
)
from llm_bridge.tokenizer import CharTokenizer
from mbrl import losses
from mbrl.networks.transformer_block import TransformerBlock, init_weights

KINDS = ("partial", "complete")


@dataclass(frozen=True)
class RewardModelSettings:
    vocab_size: int
    context: int = 64
    layers: int = 2
    heads: int = 4
    width: int = 64


class RewardModel(nn.Module):
    """``ids [B, T]`` (right-padded with id 0) -> one logit per sequence ``[B]``: the mean of the
    encoder's outputs over the real tokens, through a linear head."""

    passes_per_sequence = 1  # forward passes `probability` spends on each sequence

    def __init__(self, settings: RewardModelSettings, pad_id: int = 0):
        super().__init__()
        self.settings, self.pad_id = settings, pad_id
        self.token_embedding = nn.Embedding(settings.vocab_size, settings.width)
        self.position_embedding = nn.Embedding(settings.context, settings.width)
        self.blocks = nn.ModuleList(
            TransformerBlock(settings.width, settings.heads, causal=False)
            for _ in range(settings.layers)
        )
        self.norm = nn.LayerNorm(settings.width)
        self.head = nn.Linear(settings.width, 1)
        self.apply(init_weights)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.shape[1] > self.settings.context:
            raise ValueError(
                f"sequence of {ids.shape[1]} tokens exceeds the context {self.settings.context}"
            )
        keys = ids != self.pad_id
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x, keys=keys)
        x = self.norm(x) * keys[..., None]
        pooled = x.sum(1) / keys.sum(1, keepdim=True).clamp_min(1)
        return self.head(pooled).squeeze(-1)

    @torch.inference_mode()
    def probability(self, sequences: Sequence[Sequence[int]], chunk: int = 1024) -> np.ndarray:
        """P(good) for token-id sequences, batched; one forward pass per sequence."""
        was_training = self.training
        self.eval()
        out = []
        for start in range(0, len(sequences), chunk):
            part = sequences[start : start + chunk]
            ids = torch.zeros(len(part), max(len(s) for s in part), dtype=torch.long)
            for row, seq in enumerate(part):
                ids[row, : len(seq)] = torch.as_tensor(seq)
            out.append(torch.sigmoid(self(ids)).numpy())
        self.train(was_training)
        return np.concatenate(out) if out else np.zeros(0, np.float32)


class RewardEnsemble:
    """Several reward models (different seeds) judging together by their lowest probability: a
    mistake passes only if it fools every member, and members trained apart rarely share the
    same blind spot. Costs one pass per member per sequence."""

    def __init__(self, members: Sequence[RewardModel]):
        if not members:
            raise ValueError("a RewardEnsemble needs at least one member")
        self.members = list(members)
        self.passes_per_sequence = len(self.members)

    def probability(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        return np.min([m.probability(sequences) for m in self.members], axis=0)


def calibrated_threshold(scores: np.ndarray, labels: np.ndarray, precision: float = 0.9) -> float:
    """The lowest score at which a judge is right at least ``precision`` of the time *at that
    score*: where the isotonic (monotone non-decreasing) fit of the exact labels on the scores
    first reaches ``precision``; 1.0 if it never does.

    Not the precision of everything scored above it: that average is diluted by the many
    confident, correct answers at the top, so it can stay high down to scores where the judge is
    mostly wrong, and a search seeks out exactly those."""
    if not 0 < precision <= 1:
        raise ValueError(f"precision must be in (0, 1], got {precision}")
    order = np.argsort(scores, kind="stable")
    ordered = np.asarray(scores, np.float64)[order]
    blocks: list[list[float]] = []  # [label sum, count, first index], means strictly rising
    for index, label in enumerate(np.asarray(labels, np.float64)[order]):
        blocks.append([label, 1.0, index])
        while len(blocks) > 1 and blocks[-2][0] * blocks[-1][1] >= blocks[-1][0] * blocks[-2][1]:
            total, count, _ = blocks.pop()  # pool adjacent violators
            blocks[-1][0] += total
            blocks[-1][1] += count
    for total, count, first in blocks:
        if total / count >= precision:
            return float(ordered[int(first)])
    return 1.0


@dataclass(frozen=True)
class RewardObjective:
    """Binary cross-entropy of the model's logit to each example's label (its ``value``)."""

    def __call__(self, network: torch.nn.Module, batch: dict[str, torch.Tensor]):
        logits = network(batch["ids"])
        loss = F.binary_cross_entropy_with_logits(logits, batch["value"])
        metrics = {
            "loss": loss.detach(),
            "accuracy": ((logits > 0) == (batch["value"] > 0.5)).float().mean(),
        }
        return losses.LossOutput(loss, torch.zeros(len(logits)), metrics)


@dataclass
class LabelledText:
    ids: list[int]
    label: bool
    kind: str  # partial | complete


def labelled_examples(
    puzzles: Sequence[Puzzle], tokenizer: CharTokenizer, per_puzzle: int, seed: int
) -> list[LabelledText]:
    """``per_puzzle`` completions of each puzzle: half follow one of its solutions (to the end,
    or for fewer steps before turning random: near misses), half are random from the start;
    each gives its partial prefixes after 1..n-2 steps (label: still reachable) and the
    finished completion (label: correct)."""
    rng = random.Random(seed)
    out = []
    for puzzle in puzzles:
        prompt = [tokenizer.bos_id, *tokenizer.encode(puzzle.prompt)]
        known = solutions(puzzle.numbers, puzzle.target, limit=8, rng=rng)
        for k in range(per_puzzle):
            guide = rng.choice(known) if known and k % 2 == 0 else []
            whole = rng.random() < 0.5  # half the guided ones are solutions, for balance
            cut = len(guide) if whole else rng.randint(0, max(0, len(guide) - 1))
            steps = _completion(puzzle, guide[:cut], rng)
            for cut in range(1, len(steps)):
                text = ",".join(steps[:cut]) + ","
                label = reachable(puzzle, text)
                out.append(LabelledText([*prompt, *tokenizer.encode(text)], label, "partial"))
            text = ",".join(steps)
            label = verify(puzzle, text).correct
            ids = [*prompt, *tokenizer.encode(text), tokenizer.eos_id]
            out.append(LabelledText(ids, label, "complete"))
    return out


def _completion(puzzle: Puzzle, start: list[str], rng: random.Random) -> list[str]:
    """``start`` (steps of a solution), then random legal steps until one number is left."""
    steps, numbers = list(start), completion_numbers(puzzle, ",".join(start))
    while len(numbers) > 1:
        legal = np.flatnonzero(legal_step_mask(numbers, step_action_width(len(numbers))))
        numbers, text = apply_step(numbers, int(rng.choice(list(legal))))
        steps.append(text)
    return steps


def as_examples(texts: Sequence[LabelledText]) -> list[SequenceExample]:
    """The core's batch layout (`llm_bridge.examples`): the label as ``value``."""
    return [SequenceExample(t.ids, [], [], [], value=float(t.label)) for t in texts]


def classification_report(
    model: RewardModel, texts: Sequence[LabelledText], threshold: float = 0.5
) -> dict[str, dict[str, float]]:
    """Per kind: precision, recall, accuracy at ``threshold`` against the exact labels, and the
    share of positives."""
    scores = model.probability([t.ids for t in texts])
    report = {}
    for kind in KINDS:
        rows = [i for i, t in enumerate(texts) if t.kind == kind]
        if not rows:
            continue
        label = np.array([texts[i].label for i in rows])
        said = scores[rows] >= threshold
        true_positive = float((said & label).sum())
        report[kind] = {
            "precision": true_positive / max(1.0, float(said.sum())),
            "recall": true_positive / max(1.0, float(label.sum())),
            "accuracy": float((said == label).mean()),
            "positives": float(label.mean()),
            "count": float(len(rows)),
        }
    return report
