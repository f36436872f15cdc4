"""Stockfish opponents for chess with move tokens: specs parsed with clear errors, legal moves
played, a mate in one found; a missing engine says how to install it. Tests that run the
engine are skipped where Stockfish is not installed."""

import numpy as np
import pytest

from games.chess_game import ChessGame
from games.chess_tokens import move_to_token
from games.opponents import make_opponent
from games.stockfish import StockfishOpponent, find_stockfish, stockfish_installed

needs_stockfish = pytest.mark.skipif(not stockfish_installed(), reason="Stockfish is not installed")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("stockfish:900", r"Stockfish plays Elo 1350..2850"),
        ("stockfish-skill:21", r"the skill level is 0..20"),
        ("stockfish:1350/0ms", r"the limit per move must be positive"),
        ("stockfish:strong", r"use stockfish:<elo>"),
        ("stockfish:1500/10s", r"use stockfish:<elo>"),
    ],
)
def test_bad_specs_are_refused_naming_what_is_accepted(spec, message):
    with pytest.raises(ValueError, match=message):
        StockfishOpponent(spec)


def test_a_missing_engine_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.delenv("MBRL_STOCKFISH", raising=False)
    monkeypatch.setattr("shutil.which", lambda *args, **kwargs: None)
    with pytest.raises(ValueError, match="apt-get install stockfish"):
        find_stockfish()
    monkeypatch.setenv("MBRL_STOCKFISH", str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match="is not an executable file"):
        find_stockfish()


@needs_stockfish
def test_stockfish_plays_legal_moves_and_finds_mate_in_one():
    game = ChessGame()
    opponent = make_opponent("stockfish-skill:20/20000n", None)
    try:
        mate = game.new_state("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
        assert opponent.choose([mate], np.random.default_rng(0))[0] == move_to_token("a1a8")
        weak = make_opponent("stockfish:1350/10ms", None)
        state = game.new_state()
        for _ in range(6):
            action = weak.choose([state], np.random.default_rng(0))[0]
            assert action in state.legal_actions()
            state = game.apply(state, action).state
        weak.close()
    finally:
        opponent.close()
