"""algo=supervised on chess: a label file trains the chess transformer on the one core (loss
falls, held-out agreement is measured with the matches), resumes, and its checkpoint starts a
self-play run through init_from. The labels here are synthetic (no Stockfish needed)."""

import json
import random

import chess
import numpy as np
import pytest

from games.chess_labels import write_atomically
from games.chess_tokens import board_to_tokens, move_to_token
from mbrl.checkpoint import load_checkpoint
from mbrl.train import train
from mbrl.validation import validate

SMALL = ("model.channels=32", "model.blocks=1", "model.heads=2", "model.value_bins=8")


def synthetic_labels(path, positions: int, history: int = 8, seed: int = 0) -> None:
    """Positions of random games, each labelled with its first legal move in UCI order (a rule
    a network can learn) and a win probability from the material balance."""
    rng = random.Random(seed)
    tokens, moves, values, fens = [], [], [], []
    values_of = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
    while len(fens) < positions:
        board = chess.Board()
        while not board.is_game_over() and len(fens) < positions and board.ply() < 60:
            legal = sorted(board.legal_moves, key=lambda m: m.uci())
            material = sum(
                values_of.get(p.piece_type, 0) * (1 if p.color == board.turn else -1)
                for p in board.piece_map().values()
            )
            tokens.append(board_to_tokens(board, history))
            moves.append(move_to_token(legal[0]))
            values.append(1 / (1 + np.exp(-material / 3)))
            fens.append(board.fen())
            board.push(rng.choice(legal))
    write_atomically(
        path,
        tokens=np.stack(tokens).astype(np.int16),
        move=np.asarray(moves, np.int16),
        win_probability=np.asarray(values, np.float32),
        fen=np.asarray(fens),
        settings=np.asarray(json.dumps({"synthetic": positions})),
    )


def supervised(tiny_config, labels, run_dir, *overrides):
    return tiny_config(
        "game=chess_tokens",
        "algo=supervised",
        f"algo.labels={labels}",
        "eval.opponents=[random]",
        "eval.games=2",
        "eval.simulations=0",
        "trainer.batch_size=32",
        f"run_dir={run_dir}",
        *SMALL,
        *overrides,
    )


def test_supervised_chess_learns_resumes_and_starts_self_play(tiny_config, tmp_path):
    labels = tmp_path / "labels.npz"
    synthetic_labels(labels, positions=600)
    run = tmp_path / "sl"
    train(supervised(tiny_config, labels, run, "trainer.max_steps=60", "optim.lr=0.003"))
    summary = train(supervised(tiny_config, labels, run, "trainer.max_steps=120", "optim.lr=0.003"))
    assert summary["steps"] == 120 and summary["resumed_from"].endswith("last.ckpt")
    records = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [60, 120]
    # Chance is about 1 in 30 legal moves; the rule is learnt on positions never trained on.
    assert all(r["held_out"]["teacher_move_agreement"] >= 0.5 for r in records)
    assert load_checkpoint(run)["LabelData"]["gradient_steps"] == 120
    selfplay = tiny_config(
        "game=chess_tokens",
        "game.max_moves=8",
        "algo=gumbel_alphazero",
        "eval.opponents=[random]",
        "eval.games=2",
        f"init_from={run}",
        f"run_dir={tmp_path / 'rl'}",
        *SMALL,
        "trainer.max_steps=2",
    )
    assert train(selfplay)["steps"] == 2


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("algo.labels=",), r"algo=supervised needs algo.labels=<file>"),
        (("algo.labels=/nonexistent.npz",), r"algo.labels=/nonexistent.npz does not exist"),
    ],
)
def test_supervised_without_labels_is_refused(tiny_config, overrides, message):
    cfg = tiny_config("game=chess_tokens", "algo=supervised", *overrides)
    with pytest.raises(ValueError, match=message):
        validate(cfg)


def test_init_from_another_games_checkpoint_is_refused(tiny_config, tmp_path, trained_run):
    run_dir, _ = trained_run  # tic-tac-toe
    cfg = tiny_config("game=chess_tokens", "algo=gumbel_alphazero", f"init_from={run_dir}",
                      f"run_dir={tmp_path}", *SMALL)  # fmt: skip
    with pytest.raises(ValueError, match=r"init_from=.* was trained for game tic_tac_toe"):
        train(cfg)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda a: a["move"].__setitem__(3, 5000), r"row 3 has move out of range"),
        (lambda a: a["tokens"].__setitem__((2, 0), -1), r"row 2 has tokens out of range"),
        (lambda a: a["win_probability"].__setitem__(1, 1.5), r"row 1 has win_probability"),
        (lambda a: a["fen"].__setitem__(4, "not a fen"), r"row 4 has no valid FEN"),
        (lambda a: a["move"].__setitem__(0, move_to_token("e1e8")), r"row 0's move is illegal"),
    ],
)
def test_a_tampered_label_file_is_refused_before_training(tmp_path, tamper, message):
    from games.chess_game import ChessGame
    from games.chess_labels import load_labels
    from mbrl.supervised import read_labels

    path = tmp_path / "labels.npz"
    synthetic_labels(path, positions=10)
    arrays = load_labels(path)
    arrays["fen"] = arrays["fen"].astype("<U100")
    tamper(arrays)
    write_atomically(path, **arrays)
    with pytest.raises(ValueError, match=message):
        read_labels(str(path), ChessGame({"history": 8}))
