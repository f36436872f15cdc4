"""Stockfish as a chess opponent (and, later, teacher), started as a UCI engine by python-chess.

Specs: ``stockfish:<elo>`` plays at that Elo (``UCI_LimitStrength``; Stockfish 15.1 accepts
1350..2850), ``stockfish-skill:<level>`` at a skill level 0..20, and either takes a limit per
move after a slash: ``/<N>ms`` (milliseconds, the default 50) or ``/<N>n`` (nodes, which is
reproducible where time is not): ``stockfish:1350/100ms``, ``stockfish-skill:5/2000n``.

The engine is the Debian package ``stockfish`` (``apt-get install stockfish``, in
``/usr/games``) or any ``stockfish`` on the PATH; ``MBRL_STOCKFISH`` names another binary.
One engine process per opponent, single-threaded, started on first use and closed with it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import chess
import chess.engine
import numpy as np

from games.chess_tokens import move_to_token

ELO_RANGE = (1350, 2850)  # Stockfish 15.1's UCI_Elo
DEFAULT_LIMIT = "50ms"
SPEC = re.compile(r"(stockfish|stockfish-skill):(\d+)(?:/(\d+)(ms|n))?")
INSTALL = "apt-get install stockfish (Debian, into /usr/games), or set MBRL_STOCKFISH=/path"


def find_stockfish() -> str:
    """The Stockfish binary to run, or a clear error saying how to install one."""
    named = os.environ.get("MBRL_STOCKFISH")
    if named:
        if not (Path(named).is_file() and os.access(named, os.X_OK)):
            raise ValueError(f"MBRL_STOCKFISH={named} is not an executable file")
        return named
    found = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")
    if found is None:
        raise ValueError(f"Stockfish is not installed: {INSTALL}")
    return found


def stockfish_installed() -> bool:
    """Whether `find_stockfish` finds an engine (tests that run one skip without it)."""
    try:
        find_stockfish()
    except ValueError:
        return False
    return True


def parse_limit(spec: str, amount: str | None, unit: str | None) -> chess.engine.Limit:
    if amount is None:
        return chess.engine.Limit(time=int(DEFAULT_LIMIT[:-2]) / 1000)
    if int(amount) == 0:
        raise ValueError(f"bad opponent spec {spec!r}: the limit per move must be positive")
    if unit == "ms":
        return chess.engine.Limit(time=int(amount) / 1000)
    return chess.engine.Limit(nodes=int(amount))


class StockfishOpponent:
    """Plays chess-with-move-tokens states (`games.chess_game.ChessState`) with Stockfish."""

    def __init__(self, spec: str):
        found = SPEC.fullmatch(spec)
        if found is None:
            raise ValueError(
                f"bad opponent spec {spec!r}: use stockfish:<elo> ({ELO_RANGE[0]}..{ELO_RANGE[1]}) "
                "or stockfish-skill:<0-20>, optionally /<N>ms or /<N>n per move"
            )
        kind, value, amount, unit = found.groups()
        value = int(value)
        if kind == "stockfish" and not ELO_RANGE[0] <= value <= ELO_RANGE[1]:
            raise ValueError(
                f"bad opponent spec {spec!r}: Stockfish plays Elo {ELO_RANGE[0]}..{ELO_RANGE[1]}"
            )
        if kind == "stockfish-skill" and not 0 <= value <= 20:
            raise ValueError(f"bad opponent spec {spec!r}: the skill level is 0..20")
        self.options = (
            {"UCI_LimitStrength": True, "UCI_Elo": value}
            if kind == "stockfish"
            else {"Skill Level": value}
        )
        self.limit = parse_limit(spec, amount, unit)
        self.name = spec.replace(":", "").replace("/", "_")
        self.path = find_stockfish()
        self._engine: chess.engine.SimpleEngine | None = None

    def _started(self) -> chess.engine.SimpleEngine:
        if self._engine is None:
            self._engine = chess.engine.SimpleEngine.popen_uci(self.path)
            self._engine.configure({"Threads": 1, "Hash": 16, **self.options})
        return self._engine

    def choose(self, states: list, rng: np.random.Generator) -> np.ndarray:
        del rng  # the engine's own randomness (strength limits) is not seeded by it
        engine = self._started()
        moves = []
        for state in states:
            board = getattr(state, "board", None)
            if not isinstance(board, chess.Board):
                raise ValueError(
                    "Stockfish opponents play chess with move tokens (game=chess_tokens)"
                )
            if board.is_game_over():
                raise ValueError(f"Stockfish was asked to move in a finished game:\n{board}")
            moves.append(move_to_token(engine.play(board, self.limit).move))
        return np.asarray(moves, dtype=np.int64)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.quit()
            self._engine = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the engine process ends with ours
            pass
