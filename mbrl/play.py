"""``play(cfg)``: a human against a checkpoint in the terminal.

The board is printed before every human move with the legal moves (their ids and the game's
names: OpenSpiel's, or chess's SAN, with UCI also accepted); any of them is accepted. An illegal or malformed move is asked again, never a crash;
``quit`` or end of input leaves the game; Ctrl-C, at the prompt or during the agent's search,
ends the command with one line (``mbrl.cli._command.run_command``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mbrl.loading import load_agent
from mbrl.threads import configure_threads

SEATS = ("first", "second")


@dataclass
class PlayConfig:
    checkpoint: str = "???"  # a .ckpt file or a run directory
    seat: str = "first"  # the human's seat: first | second
    simulations: int = -1  # the agent's simulations per move; -1 = the checkpoint's eval setting
    games: int = 1


def parse_move(text: str, state, game) -> int | None:
    """An action id, or a name of a legal action in ``state`` (the game's, or an alias such
    as chess's UCI beside its SAN): exactly as written, else ignoring case where that names
    one move only ("bxc3" is a pawn's capture, "Bxc3" a bishop's); else None."""
    text = text.strip()
    legal = state.legal_actions()
    if text.isascii() and text.isdigit():  # not "--4" or "²", which int() would refuse
        return int(text) if int(text) in legal else None
    aliases = getattr(game, "action_aliases", lambda state, action: ())
    names: dict[str, int] = {}
    for action in legal:
        for name in (game.action_to_string(state, action), *aliases(state, action)):
            names.setdefault(name, action)
    if text in names:
        return names[text]
    folded = {name.lower(): set() for name in names}
    for name, action in names.items():
        folded[name.lower()].add(action)
    matches = folded.get(text.lower(), set())
    return matches.pop() if len(matches) == 1 else None


def _ask(state, game, ask: Callable[[str], str], say: Callable[[str], None]) -> int | None:
    legal = state.legal_actions()
    listing = ", ".join(f"{a}={game.action_to_string(state, a)}" for a in legal)
    while True:
        try:
            text = ask(f"your move ({listing}; or quit): ")
        except EOFError:
            return None
        if text.strip().lower() in ("quit", "exit", "q"):
            return None
        move = parse_move(text, state, game)
        if move is not None:
            return move
        say(f"{text.strip()!r} is not a legal move here; legal: {listing}")


def play(cfg: PlayConfig, ask: Callable[[str], str] = input, say: Callable[[str], None] = print):
    """Returns the human's results as a list of +1 / 0 / -1 (finished games only)."""
    if cfg.seat not in SEATS:
        raise ValueError(f"seat must be one of {SEATS}, got {cfg.seat!r}")
    if cfg.games < 1:
        raise ValueError(f"games must be >= 1, got {cfg.games}")
    configure_threads()
    loaded = load_agent(cfg.checkpoint)
    game = loaded.game
    if game is None:
        raise ValueError(
            f"checkpoint {cfg.checkpoint} plays {loaded.metadata['game']['name']}, a single-agent "
            f"environment; mbrl-play is for two-player board games (watch it with mbrl-eval "
            f"checkpoint=... video=episode.mp4)"
        )
    simulations = loaded.simulations(cfg.simulations)
    agent = loaded.agent(simulations)
    human = SEATS.index(cfg.seat)
    say(f"{game.name}: you play {cfg.seat}; the agent searches {simulations} simulations/move")
    outcomes = []
    for _ in range(cfg.games):
        state = game.new_state()
        while not state.is_terminal():
            if state.current_player() == human:
                say(game.render(state))
                move = _ask(state, game, ask, say)
                if move is None:
                    say("bye")
                    return outcomes
            else:
                move = int(agent.choose([state], np.random.default_rng())[0])
                say(f"agent plays {game.action_to_string(state, move)}")
            state.apply_action(move)
        say(game.render(state))
        result = int(np.sign(state.returns()[human]))
        say({1: "you win", 0: "draw", -1: "the agent wins"}[result])
        outcomes.append(result)
    return outcomes
