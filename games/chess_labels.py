"""Chess positions labelled by Stockfish: the teacher's best move and win probability.

    python -m games.chess_labels --positions 20000 --nodes 2000 --out data/chess_labels.npz

Positions come from games a weak Stockfish plays against itself after 0..``--opening-plies``
random moves, with random moves mixed in at a rate drawn per game, so they range from openings
to endgames and from sound to unsound play; each position is then searched by a full-strength
Stockfish for ``--nodes`` nodes. Engines are single-threaded and node-limited and every random
choice is the seed's, so a seed gives the same file. The value is Stockfish's score for
the side to move as a win probability, ``1 / (1 + exp(-cp / 250))`` (mate scores at 0 or 1).

The file (``.npz``: board tokens with the move history of ``--history`` plies, the best move's
token, the win probability, the FEN) is written once, atomically, with the settings that made
it; a later run with the same settings reuses it and a run with other settings refuses to
overwrite it unless told to.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import chess
import chess.engine
import numpy as np
from rich.progress import Progress

from games.chess_tokens import board_to_tokens, move_to_token
from games.stockfish import find_stockfish

CP_SCALE = 250.0  # centipawns -> win probability: 100 cp ahead ~ 60%
PLAYER_NODES = 200  # the games' own moves: a weak, fast Stockfish
MAX_BLUNDER_RATE = 0.3


def win_probability(score: chess.engine.PovScore, turn: chess.Color) -> float:
    relative = score.pov(turn)
    if relative.is_mate():
        return 1.0 if relative.mate() > 0 else 0.0
    return 1.0 / (1.0 + math.exp(-relative.score() / CP_SCALE))


def sample_positions(engine, rng: np.random.Generator, opening_plies: int, history: int):
    """Boards from games a weak Stockfish (``PLAYER_NODES`` per move) plays against itself,
    each after 0..``opening_plies`` random moves and with a random move instead of its own at
    a rate drawn per game from 0..``MAX_BLUNDER_RATE``: all randomness is ``rng``'s, and a
    node-limited single-threaded search is deterministic, so a seed gives the same positions."""
    while True:
        board = chess.Board()
        for _ in range(rng.integers(0, opening_plies + 1)):
            if board.is_game_over():
                break
            board.push(rng.choice(list(board.legal_moves)))
        blunder_rate = rng.uniform(0, MAX_BLUNDER_RATE)
        while not board.is_game_over(claim_draw=True) and board.ply() < 300:
            yield board.copy(stack=history > 0)
            if rng.random() < blunder_rate:
                board.push(rng.choice(list(board.legal_moves)))
            else:
                board.push(engine.play(board, chess.engine.Limit(nodes=PLAYER_NODES)).move)


def generate(
    path: Path, positions: int, nodes: int, seed: int, opening_plies: int, history: int
) -> None:
    """Write ``positions`` labelled positions to ``path`` (atomically)."""
    rng = np.random.default_rng(seed)
    tokens, moves, values, fens = [], [], [], []
    player = chess.engine.SimpleEngine.popen_uci(find_stockfish())
    teacher = chess.engine.SimpleEngine.popen_uci(find_stockfish())
    try:
        for engine in (player, teacher):
            engine.configure({"Threads": 1, "Hash": 16})
        source = sample_positions(player, rng, opening_plies, history)
        with Progress(transient=not sys.stderr.isatty()) as progress:
            task = progress.add_task("labelling positions", total=positions)
            for board in source:
                if len(fens) == positions:
                    break
                info = teacher.analyse(board, chess.engine.Limit(nodes=nodes))
                best = info.get("pv", [None])[0]
                if best is None:
                    continue
                tokens.append(board_to_tokens(board, history))
                moves.append(move_to_token(best))
                values.append(win_probability(info["score"], board.turn))
                fens.append(board.fen())
                progress.advance(task)
    finally:
        player.quit()
        teacher.quit()
    settings = dict(positions=positions, nodes=nodes, seed=seed, opening_plies=opening_plies)
    settings["history"] = history
    write_atomically(
        path,
        tokens=np.stack(tokens).astype(np.int16),
        move=np.asarray(moves, np.int16),
        win_probability=np.asarray(values, np.float32),
        fen=np.asarray(fens),
        settings=np.asarray(json.dumps(settings, sort_keys=True)),
    )


def write_atomically(path: Path, **arrays) -> None:
    # mbrl.atomic_file's idea for one .npz; games/ imports nothing from mbrl, hence the copy
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            np.savez_compressed(file, **arrays)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp's 0600 would hide the file from a group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_labels(path: Path) -> dict[str, np.ndarray]:
    """A dataset file, checked: no pickled objects (``allow_pickle=False``), matching lengths."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (ValueError, OSError, zipfile.BadZipFile) as error:  # pickles, truncation, not npz
        raise ValueError(f"{path} is not a readable chess label file ({error})") from None
    expected = {"tokens", "move", "win_probability", "fen", "settings"}
    if set(arrays) != expected:
        raise ValueError(f"{path} is not a chess label file (arrays {sorted(arrays)})")
    lengths = {len(arrays[k]) for k in ("tokens", "move", "win_probability", "fen")}
    if len(lengths) != 1:
        raise ValueError(f"{path} is corrupt: its arrays have different lengths {lengths}")
    return arrays


def saved_settings(path: Path) -> dict:
    return json.loads(str(load_labels(path)["settings"]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--positions", type=int, default=20000)
    parser.add_argument("--nodes", type=int, default=2000, help="teacher nodes per position")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--opening-plies", type=int, default=8)
    parser.add_argument("--history", type=int, default=8, help="plies of moves in the tokens")
    parser.add_argument("--out", type=Path, default=Path("data/chess_labels.npz"))
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)
    for name in ("positions", "nodes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.opening_plies < 0 or args.history < 0:
        parser.error("--opening-plies and --history must be >= 0")
    wanted = dict(
        positions=args.positions,
        nodes=args.nodes,
        seed=args.seed,
        opening_plies=args.opening_plies,
        history=args.history,
    )
    try:
        if args.out.exists() and not args.overwrite:
            saved = saved_settings(args.out)
            if saved == wanted:
                print(f"{args.out} already holds these labels: reused")
                return
            parser.exit(
                1, f"{args.out} holds labels made with {saved}; pass --overwrite to replace it\n"
            )
        generate(args.out, **wanted)
    except ValueError as error:  # no Stockfish, a corrupt file: one line
        parser.exit(1, f"{parser.prog}: {error}\n")
    print(f"wrote {args.positions} labelled positions to {args.out}")


if __name__ == "__main__":
    main()
