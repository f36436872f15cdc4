"""Fixed opponents that a trained agent is evaluated against, batched over B games in lockstep.

Every opponent maps a list of B OpenSpiel states, each non-terminal with a player to move, to B
legal actions (an ``int64`` array of shape ``[B]``). Randomness comes only from the ``rng``
passed in, so an evaluation seeded once replays exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
import pyspiel

from games.minimax import MinimaxSolver

OPPONENT_SPECS = (
    "'random', 'lookahead', 'minimax', 'mcts:<N>' (N a positive int, e.g. 'mcts:100'), "
    "'checkpoint:<path>', and for game=chess_tokens 'stockfish:<elo>' and "
    "'stockfish-skill:<0-20>' (optionally /<N>ms or /<N>n per move)"
)


@runtime_checkable
class Opponent(Protocol):
    """A fixed policy for one seat; ``name`` labels it in evaluation logs (e.g. "mcts100")."""

    name: str

    def choose(self, states: list, rng: np.random.Generator) -> np.ndarray:
        """One legal action per state: ``[B] int64``."""
        ...


def _check_to_move(state: pyspiel.State) -> None:
    """Raise for a state no opponent may act in (the C++ MCTS bot aborts on a finished game)."""
    if state.is_terminal():
        raise ValueError(f"an opponent was asked to move in a finished game:\n{state}")
    if state.is_chance_node() or state.current_player() < 0:
        raise ValueError(
            f"an opponent was asked to move where no player is to move "
            f"(current_player={state.current_player()}):\n{state}"
        )


def _choose_each(states: list, pick: Callable[[pyspiel.State], int]) -> np.ndarray:
    """Apply ``pick(state) -> action`` to every state after checking it; ``[B] int64``."""
    actions = np.empty(len(states), np.int64)
    for index, state in enumerate(states):
        _check_to_move(state)
        actions[index] = pick(state)
    return actions


def _random_choice(actions: list[int], rng: np.random.Generator) -> int:
    return actions[int(rng.integers(len(actions)))]


class RandomOpponent:
    """A uniformly random legal action: the weakest baseline."""

    name = "random"

    def choose(self, states: list, rng: np.random.Generator) -> np.ndarray:
        return _choose_each(states, lambda state: _random_choice(state.legal_actions(), rng))


def _wins_now(state: pyspiel.State, action: int, player: int) -> bool:
    child = state.child(action)
    return child.is_terminal() and child.returns()[player] > 0


def _loses_within_a_reply(state: pyspiel.State, action: int, player: int) -> bool:
    """True if ``action`` ends the game lost for ``player``, or hands the other side a win in one."""
    child = state.child(action)
    if child.is_terminal():
        return child.returns()[player] < 0
    if child.current_player() == player:  # an extra turn: no reply to fear in two plies
        return False
    for reply in child.legal_actions():
        grandchild = child.child(reply)
        if grandchild.is_terminal() and grandchild.returns()[player] < 0:
            return True
    return False


class OneStepLookaheadOpponent:
    """Win in one if possible, else avoid moves that allow a win in one, else play at random.

    The two-ply check is the classic "take wins, block threats" heuristic: strong enough to punish
    an agent that ignores immediate threats, weak enough to lose to any real plan.
    """

    name = "lookahead"

    def choose(self, states: list, rng: np.random.Generator) -> np.ndarray:
        return _choose_each(states, lambda state: self._pick(state, rng))

    def _pick(self, state: pyspiel.State, rng: np.random.Generator) -> int:
        mover = state.current_player()
        legal = state.legal_actions()
        winning = [a for a in legal if _wins_now(state, a, mover)]
        if winning:
            return _random_choice(winning, rng)
        safe = [a for a in legal if not _loses_within_a_reply(state, a, mover)]
        return _random_choice(safe or legal, rng)


class MinimaxOpponent:
    """Perfect play: uniformly random among the actions that keep the minimax value.

    Randomising among the optimal actions makes repeated games differ, so an agent is tested
    against every perfect line rather than one.
    """

    name = "minimax"

    def __init__(self, game: pyspiel.Game, solver: MinimaxSolver | None = None):
        self.solver = solver if solver is not None else MinimaxSolver(game)

    def choose(self, states: list, rng: np.random.Generator) -> np.ndarray:
        return _choose_each(
            states, lambda state: _random_choice(self.solver.optimal_actions(state), rng)
        )


class MCTSOpponent:
    """OpenSpiel's C++ MCTS with random rollouts (UCT c=2, MCTS-Solver on, as its AlphaZero
    evaluator uses), ``num_simulations`` simulations per move.

    A fresh bot is built per call (microseconds) and seeded from ``seed`` and one draw of ``rng``,
    so the moves depend only on the arguments, not on how many games the object played before.
    """

    def __init__(self, game: pyspiel.Game, num_simulations: int, seed: int = 0):
        if isinstance(num_simulations, bool) or not isinstance(num_simulations, int | np.integer):
            raise ValueError(f"num_simulations must be an int, got {num_simulations!r}")
        if num_simulations <= 0:
            raise ValueError(f"num_simulations must be positive, got {num_simulations}")
        self.game = game
        self.num_simulations = int(num_simulations)
        self.seed = seed
        self.name = f"mcts{self.num_simulations}"

    def choose(self, states: list, rng: np.random.Generator) -> np.ndarray:
        # _choose_each checks every state before stepping it: the C++ bot aborts on a terminal.
        return _choose_each(states, self._make_bot(rng).step)

    def _make_bot(self, rng: np.random.Generator) -> pyspiel.MCTSBot:
        # The C++ binding takes signed 32-bit seeds: draw 31-bit ones.
        entropy = [self.seed, int(rng.integers(2**63))]
        bot_seed, rollout_seed = np.random.SeedSequence(entropy).generate_state(2) >> 1
        evaluator = pyspiel.RandomRolloutEvaluator(1, int(rollout_seed))
        return pyspiel.MCTSBot(
            self.game,
            evaluator,
            2.0,  # uct_c
            self.num_simulations,
            1000,  # max_memory_mb
            True,  # solve: back up proven wins and losses (MCTS-Solver)
            int(bot_seed),
            False,  # verbose
        )


def _parse_num_simulations(spec: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise ValueError(
            f"bad opponent spec {spec!r}: the number of simulations in 'mcts:<N>' must be a "
            f"positive int, got {text!r}"
        )
    return int(text)


def make_opponent(spec: str, game: pyspiel.Game) -> Opponent:
    """Build the opponent named by ``spec``: one of ``OPPONENT_SPECS`` except ``checkpoint:``.

    ``checkpoint:<path>`` is listed as accepted because the caller loads checkpoints itself before
    delegating the fixed opponents here.
    """
    if spec == "random":
        return RandomOpponent()
    if spec == "lookahead":
        return OneStepLookaheadOpponent()
    if spec.startswith("stockfish"):
        from games.stockfish import StockfishOpponent  # python-chess, for chess runs only

        return StockfishOpponent(spec)
    if game is None and (spec == "minimax" or spec.startswith("mcts:")):
        raise ValueError(
            f"opponent {spec!r} searches an OpenSpiel game; this game has none (chess with "
            "move tokens): use random, lookahead or stockfish:<elo>"
        )
    if spec == "minimax":
        return MinimaxOpponent(game)
    if spec.startswith("mcts:"):
        return MCTSOpponent(game, _parse_num_simulations(spec, spec.removeprefix("mcts:")))
    raise ValueError(f"unknown opponent spec {spec!r}; accepted: {OPPONENT_SPECS}")
