"""The exact optimal policy of two-player Pig (OpenSpiel's ``pig``), to measure agents against.

A state is seen from the player to move: its score ``i``, the opponent's score ``j`` and its turn
total ``k``. Rolling risks the turn total on the die: a 1 (chance code 0) loses it and passes the
turn, any other face adds to it; stopping banks it and passes the turn. A player wins by stopping
with ``i + k >= winscore``, and OpenSpiel makes that stop the only legal move. The value is the
mover's probability of winning under optimal play by both, and since somebody wins, the opponent's
is one minus it. Turns cycle (a 1 returns the game to an earlier position), so the values are the
fixed point of value iteration (Neller and Presser 2004, "Optimal play of the dice game Pig").

The solution ignores OpenSpiel's ``horizon``: after that many decisions (rolls and stops, chance
not counted; 1000 by default) the game ends as a draw, so there the best move can depend on the
decisions left (near the end a losing player may stall for the draw). ``solve_pig`` also solves
that game from the start, by backward induction on the decisions left, and refuses a horizon that
changes the first player's value by more than ``HORIZON_GAP_TOLERANCE``: the stationary policy
here is then the one to measure against. Piglet (every face but the 1 adds one point) is solved
the same way, its die read from OpenSpiel.

Which parameters make a test: with the six-sided die and a winscore below 39, rolling until the
stop wins is optimal in every state (a test pins this for 10 to 30), so a share of optimal choices
there cannot tell an agent from "always roll"; ``optimal_share`` of that policy says how much a
measurement can discriminate. Stopping early matters for larger winscores, and for Piglet with a
coin (``dice_outcomes=2``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np
import pyspiel

ROLL, STOP = 0, 1  # OpenSpiel's action ids ("roll", "stop")
HORIZON_GAP_TOLERANCE = 1e-9  # the largest change of value by the horizon that solve_pig accepts
TIE_TOLERANCE = 1e-9  # roll and stop within this many win probability are both optimal

_STATE = re.compile(r"Scores: (\d+) (\d+), Turn total: (\d+)\nCurrent player: ([01])\n")


class PigRules(NamedTuple):
    """Pig's parameters and what one roll does, read from OpenSpiel."""

    winscore: int
    dice_outcomes: int
    piglet: bool
    bust_probability: float  # a 1: the turn total is lost and the turn passes
    increments: tuple[int, ...]  # what each other chance outcome adds to the turn total
    probabilities: tuple[float, ...]  # and its probability

    @property
    def shape(self) -> tuple[int, int, int]:
        """(W, W, K): mover's score, opponent's score, turn total; K reaches every turn total."""
        return (self.winscore, self.winscore, self.winscore + max(self.increments))

    @property
    def params(self) -> dict[str, Any]:
        """OpenSpiel's parameters for this game (its default horizon)."""
        return {
            "winscore": self.winscore,
            "diceoutcomes": self.dice_outcomes,
            "piglet": self.piglet,
        }


class PigSolution(NamedTuple):
    """Pig solved. Arrays are ``rules.shape`` = [W, W, K] float64, indexed by (mover's score
    ``i``, opponent's score ``j``, turn total ``k``); entries with ``i + k >= W`` are states where
    stopping wins and is the only legal move."""

    rules: PigRules
    win_probability: np.ndarray  # the mover's P(win) under optimal play by both; 1 where i+k >= W
    roll_win_probability: np.ndarray  # ... if it rolls now, then plays optimally; NaN where illegal
    stop_win_probability: np.ndarray  # ... if it stops now
    sweeps: int  # value-iteration sweeps until the largest change fell below the tolerance
    largest_change: float  # in the last sweep
    # |value of OpenSpiel's game with its horizon - win_probability[0, 0, 0]|, a draw counting
    # 1/2: how much the horizon changes the game from the start.
    horizon_gap: float

    def optimal_actions(self, i: int, j: int, k: int, tolerance: float = TIE_TOLERANCE):
        """The optimal action ids at (i, j, k): ``{ROLL}``, ``{STOP}``, or both on a tie."""
        winscore, _, size = self.rules.shape
        if not (0 <= i < winscore and 0 <= j < winscore and 0 <= k < size):
            raise ValueError(
                f"no decision at (score {i}, opponent {j}, turn total {k}): scores lie in "
                f"[0, {winscore}) and turn totals in [0, {size}) for winscore {winscore}"
            )
        if i + k >= winscore:
            return frozenset({STOP})
        roll, stop = self.roll_win_probability[i, j, k], self.stop_win_probability[i, j, k]
        if abs(roll - stop) <= tolerance:
            return frozenset({ROLL, STOP})
        return frozenset({ROLL if roll > stop else STOP})

    def rolls(self, tolerance: float = TIE_TOLERANCE) -> np.ndarray:
        """[W, W, K] bool: where the optimal policy rolls (rolling on ties, never where illegal)."""
        legal = ~np.isnan(self.roll_win_probability)
        return legal & (
            np.nan_to_num(self.roll_win_probability) >= self.stop_win_probability - tolerance
        )

    def policy(self, tolerance: float = TIE_TOLERANCE) -> Callable[[Any], int]:
        """An optimal policy on pyspiel states, rolling on ties: ``policy(state) -> action id``."""
        rolls = self.rolls(tolerance)
        return lambda state: ROLL if rolls[state_key(state)] else STOP


class MatchOdds(NamedTuple):
    """A policy's probability of beating another, by seat."""

    moving_first: float
    moving_second: float


def _check_int(name: str, value, smallest: int, largest: int, meaning: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        value_ok = False
    else:
        value_ok = smallest <= value <= largest
    if not value_ok:
        raise ValueError(
            f"{name} must be an integer from {smallest} to {largest} ({meaning}), got {value!r}"
        )
    return int(value)


def pig_rules(winscore: int, *, dice_outcomes: int = 6, piglet: bool = False) -> PigRules:
    """Check the parameters and read the die from OpenSpiel's chance outcomes after a roll."""
    winscore = _check_int("winscore", winscore, 1, 100, "the score that wins")
    dice_outcomes = _check_int("dice_outcomes", dice_outcomes, 2, 100, "the die's faces")
    if not isinstance(piglet, bool | np.bool_):
        raise ValueError(f"piglet must be True or False, got {piglet!r}")
    rules = {"winscore": winscore, "diceoutcomes": dice_outcomes, "piglet": bool(piglet)}
    state = pyspiel.load_game("pig", rules).new_initial_state()
    state.apply_action(ROLL)
    bust, increments, probabilities = 0.0, [], []
    for code, probability in state.chance_outcomes():
        child = state.clone()
        child.apply_action(code)
        if child.current_player() != 0:  # the turn passed: a 1
            bust += probability
        else:
            increments.append(state_key(child)[2])
            probabilities.append(probability)
    return PigRules(
        winscore, dice_outcomes, bool(piglet), bust, tuple(increments), tuple(probabilities)
    )


def _grid(rules: PigRules):
    """Index arrays (i, j, k) broadcasting to ``rules.shape``, and where stopping is forced."""
    winscore, _, size = rules.shape
    i, j, k = np.ogrid[:winscore, :winscore, :size]
    return i, j, k, np.broadcast_to(i + k >= winscore, rules.shape)


def _action_values(mover: np.ndarray, opponent: np.ndarray, rules: PigRules):
    """One Bellman backup. ``mover`` [W, W, K]: the mover's P(win) in its own turn; ``opponent``
    [W, W, K]: the opponent's P(win) when it is to move. Returns the mover's P(win) if it rolls
    (NaN where rolling is illegal) and if it stops, each [W, W, K]."""
    winscore, _, size = rules.shape
    i, j, k, forced = _grid(rules)
    # passed[m, j]: the mover's P(win) once its turn ends at score m and the opponent (at j)
    # starts its own; 1 where m >= W, the mover having won.
    passed = np.ones((winscore + size, winscore))
    passed[:winscore] = 1.0 - opponent[:, :, 0].T
    stop = passed[i + k, j]
    beyond = np.ones((winscore, winscore, max(rules.increments)))  # only forced states reach it
    padded = np.concatenate([mover, beyond], axis=2)
    roll = rules.bust_probability * passed[:winscore, :, None]
    for increment, probability in zip(rules.increments, rules.probabilities, strict=True):
        roll = roll + probability * padded[:, :, increment : increment + size]
    return np.where(forced, np.nan, roll), stop


def _iterate(backup, start: tuple[np.ndarray, ...], tolerance: float, most_sweeps: int, what: str):
    """Apply ``backup`` until no entry changes by more than ``tolerance``."""
    values = start
    for sweep in range(1, most_sweeps + 1):
        updated = backup(*values)
        change = max(
            float(np.abs(new - old).max()) for new, old in zip(updated, values, strict=True)
        )
        values = updated
        if change < tolerance:
            return values, sweep, change
    raise RuntimeError(
        f"{what} did not converge in {most_sweeps} sweeps (last change {change:.3g})"
    )


def solve_pig(
    winscore: int,
    *,
    dice_outcomes: int = 6,
    piglet: bool = False,
    horizon: int = 1000,
    tolerance: float = 1e-12,
    most_sweeps: int = 100_000,
) -> PigSolution:
    """Solve two-player Pig by value iteration on the mover's P(win) from all-zero values,
    until the largest change of a sweep is below ``tolerance``. ``horizon`` is the OpenSpiel
    parameter the agent plays under (see the module docstring)."""
    rules = pig_rules(winscore, dice_outcomes=dice_outcomes, piglet=piglet)
    horizon = _check_int("horizon", horizon, 1, 2**31 - 1, "OpenSpiel's decision limit")
    forced = _grid(rules)[3]

    def backup(value):
        roll, stop = _action_values(value, value, rules)
        return (np.where(forced, 1.0, np.fmax(roll, stop)),)

    start = (np.where(forced, 1.0, 0.0),)
    (value,), sweeps, change = _iterate(backup, start, tolerance, most_sweeps, "Pig's solution")
    roll, stop = _action_values(value, value, rules)
    solution = PigSolution(rules, value, roll, stop, sweeps, change, float("nan"))
    gap = abs(_horizon_value(rules, horizon, tolerance) - value[0, 0, 0])
    if gap > HORIZON_GAP_TOLERANCE:
        raise ValueError(
            f"horizon {horizon} is too short for winscore {rules.winscore}: it changes the first "
            f"player's value by {gap:.3g} > {HORIZON_GAP_TOLERANCE:g} (a draw counting 1/2), so "
            f"the best moves would depend on the decisions left; use a longer horizon (default "
            f"1000)"
        )
    return solution._replace(horizon_gap=float(gap))


def _horizon_value(rules: PigRules, horizon: int, tolerance: float) -> float:
    """The first player's value of OpenSpiel's game with its horizon, a draw counting 1/2 (the
    returns' affine image): backward induction on the decisions left, from a draw when none are.
    It is value iteration from 1/2, so it stops early once the values stop changing."""
    forced = _grid(rules)[3]
    value = np.full(rules.shape, 0.5)
    for _ in range(horizon):
        roll, stop = _action_values(value, value, rules)  # a roll on the last decision: 1/2
        value, old = np.where(forced, 1.0, np.fmax(roll, stop)), value  # a winning stop counts
        if np.abs(value - old).max() < tolerance:
            break
    return float(value[0, 0, 0])


def match_win_probability(rules: PigRules, rolls, opponent_rolls) -> MatchOdds:
    """The exact probability that a player rolling where ``rolls`` is True beats one rolling
    where ``opponent_rolls`` is, in either seat. Both are bool arrays broadcasting to
    ``rules.shape`` (mover's score, opponent's score, turn total); rolls where illegal are
    ignored."""
    forced = _grid(rules)[3]
    tables = [
        np.broadcast_to(np.asarray(r, np.bool_), rules.shape) for r in (rolls, opponent_rolls)
    ]
    # Both passing at turn total 0 with the same scores would stall the game for ever.
    stalls = np.argwhere(~tables[0][:, :, 0] & ~tables[1][:, :, 0].T)
    if len(stalls):
        i, j = stalls[0].tolist()
        raise ValueError(
            f"the policies never finish a game at scores ({i}, {j}): the first stops at turn "
            f"total 0 there and the second at ({j}, {i}); roll at turn total 0 in one of them"
        )

    def backup(value, opponent_value):
        new = []
        for table, mine, theirs in (
            (tables[0], value, opponent_value),
            (tables[1], opponent_value, value),
        ):
            roll, stop = _action_values(mine, theirs, rules)
            new.append(np.where(forced, 1.0, np.where(table, np.nan_to_num(roll), stop)))
        return tuple(new)

    start = (np.where(forced, 1.0, 0.0),) * 2
    (value, opponent_value), _, _ = _iterate(backup, start, 1e-12, 100_000, "The match")
    return MatchOdds(float(value[0, 0, 0]), float(1.0 - opponent_value[0, 0, 0]))


MOST_DECISIONS = 1_000_000  # `expected_visits` gives up on a match this long


def expected_visits(rules: PigRules, rolls, opponent_rolls, *, tolerance: float = 1e-12):
    """``[W, W, K]``: how often, on average over the two seats, a player rolling where ``rolls``
    is True meets each decision state (its score, the opponent's, the turn total) in a match
    against one rolling where ``opponent_rolls`` is (bool arrays as in `match_win_probability`).
    The game's probability mass is pushed forward decision by decision until less than
    ``tolerance`` of it is still playing."""
    winscore, _, size = rules.shape
    forced = _grid(rules)[3]
    tables = [
        np.broadcast_to(np.asarray(r, np.bool_), rules.shape) & ~forced
        for r in (rolls, opponent_rolls)
    ]
    i, _, k = np.ogrid[:winscore, :winscore, :size]
    stopped_score = np.broadcast_to(i + k, rules.shape)  # the mover's score once it stops

    def step(mass: np.ndarray, table: np.ndarray):
        """Mass where this player moves -> (its mass next decision, the other's)."""
        mine, theirs = np.zeros(rules.shape), np.zeros(rules.shape)
        roll, stop = np.where(table, mass, 0.0), np.where(table | forced, 0.0, mass)
        for increment, probability in zip(rules.increments, rules.probabilities, strict=True):
            mine[:, :, increment:] += probability * roll[:, :, : size - increment]
        theirs[:, :, 0] += rules.bust_probability * roll.sum(2).T  # (j, i): the other moves
        rows, opponent, totals = np.nonzero(stop)
        np.add.at(
            theirs,
            (opponent, stopped_score[rows, opponent, totals], 0),
            stop[rows, opponent, totals],
        )
        return mine, theirs  # forced states stop and win: their mass leaves the game

    visits = np.zeros(rules.shape)
    for first in (True, False):
        player, other = np.zeros(rules.shape), np.zeros(rules.shape)
        (player if first else other)[0, 0, 0] = 1.0
        for _ in range(MOST_DECISIONS):
            if player.sum() + other.sum() <= tolerance:
                break
            visits += 0.5 * player
            player_next, given = step(player, tables[0])
            other_next, taken = step(other, tables[1])
            player, other = player_next + taken, other_next + given
        else:
            raise ValueError(
                f"the match is still undecided after {MOST_DECISIONS} decisions: the policies "
                "stall (both stop at turn total 0?)"
            )
    return visits


def state_key(state) -> tuple[int, int, int]:
    """(mover's score, opponent's score, turn total) of a two-player pig decision state, read from
    its string: the observation tensor is ordered by player, not mover, and clips turn totals."""
    match = _STATE.fullmatch(str(state))
    if match is None or state.is_terminal():
        raise ValueError(f"not a two-player pig decision state: {str(state)!r}")
    first, second, turn_total, player = map(int, match.groups())
    return (first, second, turn_total) if player == 0 else (second, first, turn_total)


def reachable_decision_states(
    winscore: int, *, dice_outcomes: int = 6, piglet: bool = False, choices_only: bool = True
):
    """Every decision state of OpenSpiel's pig reachable from the start where the mover has a
    choice (roll and stop both legal; with ``choices_only=False`` also those where stopping is
    the only legal move), one pyspiel state per (scores, turn total, player to move), found
    breadth first through OpenSpiel itself."""
    rules = pig_rules(winscore, dice_outcomes=dice_outcomes, piglet=piglet)
    start = pyspiel.load_game("pig", rules.params).new_initial_state()
    seen, frontier, choices = {str(start)}, deque([start]), []
    while frontier:
        state = frontier.popleft()
        if not state.is_chance_node() and (not choices_only or len(state.legal_actions()) == 2):
            choices.append(state)
        moves = (
            [code for code, _ in state.chance_outcomes()]
            if state.is_chance_node()
            else state.legal_actions()
        )
        for move in moves:
            child = state.child(move)
            if not child.is_terminal() and str(child) not in seen:
                seen.add(str(child))
                frontier.append(child)
    return choices


def optimal_share(
    policy: Callable[[Any], int],
    solution: PigSolution,
    states: Iterable,
    tolerance: float = TIE_TOLERANCE,
) -> float:
    """The share of ``states`` (pyspiel decision states of the solved game) where
    ``policy(state)`` returns an optimal action id."""
    states = list(states)
    if not states:
        raise ValueError("optimal_share needs at least one state, got none")
    expected = solution.rules.params
    right = 0
    for state in states:
        params = state.get_game().get_parameters()
        if any(params[name] != value for name, value in expected.items()):
            raise ValueError(f"a state of pig {params} was given to the solution of pig {expected}")
        right += int(policy(state)) in solution.optimal_actions(*state_key(state), tolerance)
    return right / len(states)
