"""Chess puzzles: positions with a forced mate that Stockfish finds, and tactical accuracy.

    python -m games.chess_puzzles --labels data/chess_labels.npz --out data/chess_puzzles.npz

A puzzle is a position from a label file (`games.chess_labels`) where Stockfish, searching
``--nodes`` nodes, announces mate in at most ``--max-mate`` moves for the side to move. A
player solves it when its move keeps the mate: for a mate in one the move mates; for longer
mates the position after the move is still lost for the defender within ``mate - 1`` moves
(checked with Stockfish when it is installed, else the move must be Stockfish's own).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import chess
import chess.engine
import numpy as np
from rich.progress import track

from games.chess_labels import load_labels, write_atomically
from games.chess_tokens import move_to_token, token_to_move
from games.stockfish import find_stockfish


def find_puzzles(fens, nodes: int, max_mate: int) -> dict[str, np.ndarray]:
    """The positions among ``fens`` where the side to move mates within ``max_mate`` moves."""
    found = {"fen": [], "move": [], "mate": []}
    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish())
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        for fen in track(list(fens), description="looking for forced mates", transient=True):
            board = chess.Board(str(fen))
            info = engine.analyse(board, chess.engine.Limit(nodes=nodes))
            mate = info["score"].pov(board.turn).mate()
            if mate is not None and 0 < mate <= max_mate and info.get("pv"):
                found["fen"].append(board.fen())
                found["move"].append(move_to_token(info["pv"][0]))
                found["mate"].append(mate)
    finally:
        engine.quit()
    return {
        "fen": np.asarray(found["fen"]),
        "move": np.asarray(found["move"], np.int16),
        "mate": np.asarray(found["mate"], np.int8),
    }


def load_puzzles(path: str | Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            puzzles = {key: data[key] for key in data.files}
    except (ValueError, OSError) as error:
        raise ValueError(f"{path} is not a readable puzzle file ({error})") from None
    if not {"fen", "move", "mate"} <= set(puzzles):
        raise ValueError(f"{path} is not a puzzle file (arrays {sorted(puzzles)})")
    return puzzles


class PuzzleJudge:
    """Whether a move solves a puzzle (see the module doc); ``engine`` checks longer mates."""

    def __init__(self, engine: chess.engine.SimpleEngine | None = None, nodes: int = 20000):
        self.engine, self.nodes = engine, nodes

    def solves(self, fen: str, move: chess.Move, solution: chess.Move, mate: int) -> bool:
        board = chess.Board(fen)
        if not board.is_legal(move):
            return False
        board.push(move)
        if board.is_checkmate():
            return True
        if mate == 1:
            return False
        if self.engine is None:
            return move == solution
        score = self.engine.analyse(board, chess.engine.Limit(nodes=self.nodes))["score"]
        defender = score.pov(board.turn).mate()
        return defender is not None and defender < 0 and -defender <= mate - 1


def accuracy(choose, puzzles: dict[str, np.ndarray], judge: PuzzleJudge) -> float:
    """The share of puzzles ``choose(fens) -> move tokens`` solves."""
    fens = [str(f) for f in puzzles["fen"]]
    moves = choose(fens)
    solved = [
        judge.solves(fen, token_to_move(int(move)), token_to_move(int(solution)), int(mate))
        for fen, move, solution, mate in zip(
            fens, moves, puzzles["move"], puzzles["mate"], strict=True
        )
    ]
    return float(np.mean(solved)) if solved else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--labels", type=Path, default=Path("data/chess_labels.npz"))
    parser.add_argument("--out", type=Path, default=Path("data/chess_puzzles.npz"))
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--max-mate", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="positions to search (0 = all)")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.max_mate < 1 or args.limit < 0:
        parser.error("--nodes and --max-mate must be >= 1, --limit >= 0")
    try:
        if args.out.exists():
            puzzles = load_puzzles(args.out)
            print(f"{args.out} holds {len(puzzles['fen'])} puzzles: reused")
            return
        fens = load_labels(args.labels)["fen"]
        fens = fens[: args.limit] if args.limit else fens
        puzzles = find_puzzles(fens, args.nodes, args.max_mate)
    except ValueError as error:
        parser.exit(1, f"{parser.prog}: {error}\n")
    settings = {"labels": str(args.labels), "nodes": args.nodes, "max_mate": args.max_mate}
    write_atomically(args.out, **puzzles, settings=np.asarray(json.dumps(settings)))
    counts = np.bincount(puzzles["mate"], minlength=args.max_mate + 1)[1:]
    print(
        f"wrote {len(puzzles['fen'])} puzzles to {args.out} (mate in 1..{args.max_mate}: {counts})"
    )


if __name__ == "__main__":
    main()
