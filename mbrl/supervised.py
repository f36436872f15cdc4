"""Supervised learning from a teacher's labels (``algo=supervised``): the same ``System``,
objective, checkpoints, evaluation and resume as self-play, with batches from a label file.

Chess today: `games.chess_labels` writes Stockfish's best move and win probability for each
position; the policy target is the best move (one-hot), the value target the win probability
mapped to [-1, 1], and AlphaZero's objective trains the network on them. A run's checkpoint
plays (``mbrl-eval``) and starts a self-play run (``init_from=...``), which then distils the
search's improved policy as AlphaZero does.

The last ``HELD_OUT`` share of the positions is never trained on; every ``eval.every`` steps the
network's move agreement with the teacher and its value error on them go to TensorBoard and
``eval.jsonl`` with the matches.
"""

from __future__ import annotations

import chess
import lightning as L
import numpy as np
import torch

from games.chess_game import ChessGame
from games.chess_labels import load_labels
from games.chess_tokens import NUM_MOVES, VOCAB_SIZE, token_to_move
from mbrl.selfplay.batch_stream import stream_loader

HELD_OUT = 0.05


class LabelData(L.LightningDataModule):
    """Batches of ``batch_size`` labelled positions, an epoch at a time in a seeded order."""

    def __init__(self, path: str, game: ChessGame, batch_size: int, *, seed: int):
        super().__init__()
        self.game, self.batch_size = game, batch_size
        self.train_part, held_out = split(read_labels(path, game))
        if len(self.train_part["move"]) < batch_size:
            raise ValueError(
                f"{path} holds {len(self.train_part['move']) + len(held_out['move'])} positions: "
                f"too few for batches of {batch_size} after holding out {len(held_out['move'])}"
            )
        self.rng = np.random.default_rng(seed)
        self.order = np.zeros(0, np.int64)
        self.cursor = 0
        self.gradient_steps = 0

    @property
    def moves_played(self) -> int:  # the evaluation's "environment steps": none here
        return 0

    def train_dataloader(self):
        trainer = getattr(self, "trainer", None)
        return stream_loader(self, 0 if trainer is None else trainer.max_steps)

    def next_batch(self) -> dict[str, torch.Tensor]:
        if self.cursor + self.batch_size > len(self.order):  # a new epoch, reshuffled
            self.order = self.rng.permutation(len(self.train_part["move"]))
            self.cursor = 0
        rows = self.order[self.cursor : self.cursor + self.batch_size]
        self.cursor += self.batch_size
        self.gradient_steps += 1
        return label_batch(self.game, self.train_part, rows)

    def update_priorities(self, indices, errors) -> None:
        """Labels are sampled uniformly: no priorities."""

    def stats(self) -> dict[str, float]:
        return {
            "labels/epoch": self.gradient_steps * self.batch_size / len(self.train_part["move"])
        }

    def state_dict(self) -> dict:
        return {
            "rng": self.rng.bit_generator.state,
            "order": torch.from_numpy(self.order),
            "cursor": self.cursor,
            "gradient_steps": self.gradient_steps,
        }

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.order = np.asarray(state["order"], np.int64)
        self.cursor = int(state["cursor"])
        self.gradient_steps = int(state["gradient_steps"])


def read_labels(path: str, game: ChessGame) -> dict[str, np.ndarray]:
    """A label file whose boards fit ``game``'s observation, checked row by row before any
    training: tokens in the vocabulary, probabilities in [0, 1], every FEN a position and every
    move legal in it (a file from elsewhere must not crash a run hours in)."""
    labels = load_labels(path)
    width = game.obs_shape[0]
    if labels["tokens"].ndim != 2 or labels["tokens"].shape[1] != width:
        raise ValueError(
            f"{path} holds boards of shape {labels['tokens'].shape[1:]}; game.params.history="
            f"{game.history} takes {width} tokens (make the labels with --history {game.history})"
        )
    checks = {
        "tokens": (labels["tokens"] >= 0) & (labels["tokens"] < VOCAB_SIZE),
        "move": (labels["move"] >= 0) & (labels["move"] < NUM_MOVES),
        "win_probability": (labels["win_probability"] >= 0) & (labels["win_probability"] <= 1),
    }
    for name, ok in checks.items():
        if not ok.all():
            row = int(np.flatnonzero(~ok.reshape(len(ok), -1).all(1))[0])
            raise ValueError(f"{path}: row {row} has {name} out of range")
    for row, (fen, move) in enumerate(zip(labels["fen"], labels["move"], strict=True)):
        try:
            legal = chess.Board(str(fen)).is_legal(token_to_move(int(move)))
        except ValueError:
            raise ValueError(f"{path}: row {row} has no valid FEN: {str(fen)[:80]!r}") from None
        if not legal:
            raise ValueError(f"{path}: row {row}'s move is illegal in its position {fen}")
    return labels


def split(labels: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """(trained on, held out): the last `HELD_OUT` share is held out."""
    held_out = max(1, int(len(labels["move"]) * HELD_OUT))
    arrays = {k: v for k, v in labels.items() if k != "settings"}
    return {k: v[:-held_out] for k, v in arrays.items()}, {
        k: v[-held_out:] for k, v in arrays.items()
    }


def label_batch(game: ChessGame, part: dict[str, np.ndarray], rows: np.ndarray) -> dict:
    """AlphaZero's batch layout: the teacher's move one-hot, its win probability in [-1, 1]."""
    moves = part["move"][rows].astype(np.int64)
    policy = np.zeros((len(rows), game.num_actions), np.float32)
    policy[np.arange(len(rows)), moves] = 1.0
    legal = np.stack([game.legal_mask(game.new_state(str(fen))) for fen in part["fen"][rows]])
    arrays = {
        "obs": part["tokens"][rows].astype(np.float32),
        "legal": legal,
        "policy": policy,
        "value": 2.0 * part["win_probability"][rows] - 1.0,
        "weights": np.ones(len(rows), np.float32),
        "indices": rows.astype(np.int64),  # the positions' rows (no priorities to update)
    }
    return {name: torch.from_numpy(np.ascontiguousarray(v)) for name, v in arrays.items()}


class HeldOut:
    """``(network) -> metrics`` on the held-out positions: the teacher's move agreement (top-1
    among legal moves), the value's error, and how often the policy's argmax before masking is
    a legal move. Part of every evaluation of a supervised run."""

    def __init__(self, path: str, game: ChessGame):
        self.game = game
        self.part = split(read_labels(path, game))[1]
        self.batch = label_batch(game, self.part, np.arange(len(self.part["move"])))

    @torch.inference_mode()
    def __call__(self, network: torch.nn.Module) -> dict[str, float]:
        device = next(network.parameters()).device
        was_training = network.training
        output = network.eval()(self.batch["obs"].to(device))
        network.train(was_training)
        logits, legal = output.logits.cpu(), self.batch["legal"]
        # Play masks illegal moves; how often the unmasked argmax is legal shows what it learnt.
        unmasked_legal = legal.gather(1, logits.argmax(-1, keepdim=True)).float().mean()
        agree = logits.masked_fill(~legal, -torch.inf).argmax(-1).numpy() == self.part["move"]
        error = (output.value.cpu() - self.batch["value"]).abs().mean()
        return {
            "teacher_move_agreement": float(agree.mean()),
            "value_abs_error": float(error),
            "unmasked_argmax_legal": float(unmasked_legal),
        }
