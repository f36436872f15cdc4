"""Countdown: combine the given numbers with + - * / to reach a target (Countdown-24 by default).

Text formats (every character is in `llm_bridge.tokenizer.COUNTDOWN_ALPHABET`):

* prompt: the numbers ascending, space-separated, then ``>target:``, e.g. ``"1 3 4 6>24:"``.
* number literal: an integer in decimal (``"12"``); any other rational reduced as ``"p|q"``
  (``"3|4"``), because ``/`` is the division operator. Values are never negative.
* completion: steps joined by ``","``, each ``"a op b=c"`` with op in ``+ - * /``, e.g.
  ``"3/4=3|4,1-3|4=1|4,6/1|4=24"``. A step takes two numbers out of the current multiset and
  puts ``c`` back; subtraction is larger minus smaller (``a >= b``), division by zero is illegal
  and every literal must be written exactly as above. After ``n - 1`` steps one number is left;
  the completion is correct iff it equals the target. The text ends where the model emits <eos>.

Three views of these rules share one step checker (`_check_step`) and one step table
(`_decode_action`): `verify` (text -> verdict with a reason), `allowed_next` (the character
grammar for constrained decoding) and the fixed-width step actions (`legal_step_mask`,
`apply_step`) for step-level search. Arithmetic is exact: 1 3 4 6 needs 6/(1-3/4).
"""

from __future__ import annotations

import hashlib
import random
import re
from bisect import insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from itertools import combinations_with_replacement
from typing import NamedTuple

from llm_bridge.tokenizer import EOS

OPERATORS = "+-*/"
STEP_OP_NAMES = ("a+b", "a-b", "b-a", "a*b", "a/b", "b/a")  # per pair (a, b) with a <= b
NUM_STEP_OPS = len(STEP_OP_NAMES)
# (swap operands?, operator) for each of the NUM_STEP_OPS step ops, in action order.
_STEP_OPS = ((False, "+"), (False, "-"), (True, "-"), (False, "*"), (False, "/"), (True, "/"))
# [0-9], not \d: \d also matches non-ASCII digits, which no literal contains.
_LITERAL = r"[0-9]+(?:\|[0-9]+)?"
_STEP = re.compile(rf"({_LITERAL})([-+*/])({_LITERAL})=({_LITERAL})")
_PARTIAL_STEP = re.compile(r"([0-9|]*)(?:([-+*/])([0-9|]*)(?:=([0-9|]*))?)?")
_DIGITS = frozenset("0123456789")
_NOTHING: frozenset[str] = frozenset()

State = tuple[Fraction, ...]  # the current multiset, sorted ascending so equal states are equal


@dataclass(frozen=True, order=True)
class Puzzle:
    """numbers: the starting multiset, stored sorted ascending (any order is accepted).
    target: the value the last remaining number must equal."""

    numbers: tuple[int, ...]
    target: int = 24

    def __post_init__(self):
        numbers = tuple(sorted(self.numbers))
        if len(numbers) < 2 or any(type(x) is not int or x < 0 for x in numbers):
            raise ValueError(f"a puzzle needs two or more non-negative ints, got {self.numbers!r}")
        if type(self.target) is not int or self.target < 0:
            raise ValueError(f"the target must be a non-negative int, got {self.target!r}")
        object.__setattr__(self, "numbers", numbers)

    @property
    def prompt(self) -> str:
        """``"1 3 4 6>24:"``."""
        return f"{' '.join(map(str, self.numbers))}>{self.target}:"

    @classmethod
    def from_prompt(cls, prompt: str) -> Puzzle:
        """The puzzle whose prompt ends ``prompt`` (trailing whitespace ignored, so instructions
        or worked examples may come before it). Raises ValueError if there is none."""
        found = _puzzle_at_end(prompt)
        if found is None:
            raise ValueError(
                f"no Countdown prompt like '1 3 4 6>24:' at the end of {_tail(prompt)}"
            )
        numbers, target = found
        try:
            return cls(tuple(map(int, numbers.split(" "))), int(target))
        except ValueError as error:  # e.g. more digits than int() accepts
            raise ValueError(f"bad Countdown prompt {_tail(prompt)}: {error}") from None


def _puzzle_at_end(prompt: str) -> tuple[str, str] | None:
    """``(numbers, target)`` of the ``"1 3 4 6>24:"`` that ends ``prompt`` (trailing whitespace
    ignored; the numbers single-spaced, as many as precede the ``>`` so), or None. A scan from
    the end, linear in the prompt: a regular expression searched from every start position
    took time quadratic in a long run of digits (minutes for a 200 KB line)."""
    text = prompt.rstrip()
    if not text.endswith(":"):
        return None
    head, arrow, target = text[:-1].rpartition(">")
    if not arrow or not target or not _DIGITS.issuperset(target):
        return None
    start = len(head)
    while start > 0 and (head[start - 1] in _DIGITS or head[start - 1] == " "):
        start -= 1
    numbers = head[start:].split("  ")[-1].lstrip(" ")  # after the last double space
    if " " not in numbers or numbers.endswith(" "):
        return None
    return numbers, target


def _tail(prompt: str, width: int = 60) -> str:
    """The prompt's end, quoted, for an error message (a prompt may be long)."""
    return repr(prompt) if len(prompt) <= width else f"...{prompt[-width:]!r}"


class Verdict(NamedTuple):
    """correct: the completion is well formed and ends at the target.
    reason: "ok", or the first problem found, one of: "malformed step '...'", "extra step '...'",
    "number 7 not available", "negative result 3-4", "division by zero 3/0",
    "wrong arithmetic 3+4=8", "unused numbers 6 7", "final 23 != 24"."""

    correct: bool
    reason: str

    @property
    def well_formed(self) -> bool:
        """Every step is valid and all numbers are used; only the final value may be off."""
        return self.correct or self.reason.startswith("final ")


def literal(value: Fraction | int) -> str:
    """``"12"`` for an integer, ``"3|4"`` for a non-integer rational (always reduced)."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}|{value.denominator}"


def _combine(left: Fraction, op: str, right: Fraction) -> Fraction | None:
    """``left op right``, or None where the rules forbid it (negative result, division by 0)."""
    if op == "+":
        return left + right
    if op == "-":
        return left - right if left >= right else None
    if op == "*":
        return left * right
    return left / right if right else None


def _start(numbers: Iterable[int]) -> State:
    return tuple(sorted(Fraction(x) for x in numbers))


def _remove_literal(values: list[Fraction], text: str) -> Fraction | None:
    """Pops (and returns) one value of ``values`` written ``text``; None if there is none."""
    for index, value in enumerate(values):
        if literal(value) == text:
            return values.pop(index)
    return None


def _check_step(state: State, text: str) -> tuple[State | None, str]:
    """(the state after step ``text``, "ok"), or (None, why the step is not allowed)."""
    match = _STEP.fullmatch(text)
    if match is None:
        return None, f"malformed step {text!r}"
    if len(state) < 2:
        return None, f"extra step {text!r}"
    first, op, second, written = match.groups()
    values = list(state)
    left = _remove_literal(values, first)
    right = None if left is None else _remove_literal(values, second)
    if left is None or right is None:
        return None, f"number {first if left is None else second} not available"
    result = _combine(left, op, right)
    if result is None:
        problem = "negative result" if op == "-" else "division by zero"
        return None, f"{problem} {first}{op}{second}"
    if literal(result) != written:
        return None, f"wrong arithmetic {text}"
    insort(values, result)
    return tuple(values), "ok"


def verify(puzzle: Puzzle, completion: str) -> Verdict:
    """Checks ``completion`` (text after the prompt, without <eos>) step by step. Never raises."""
    state: State | None = _start(puzzle.numbers)
    for text in completion.split(","):
        state, reason = _check_step(state, text)
        if state is None:
            return Verdict(False, reason)
    if len(state) > 1:
        return Verdict(False, f"unused numbers {' '.join(map(literal, state))}")
    if state[0] != puzzle.target:
        return Verdict(False, f"final {literal(state[0])} != {puzzle.target}")
    return Verdict(True, "ok")


# --- step actions: a fixed action set for step-level search -------------------------------------


@cache
def step_pair(pair_index: int) -> tuple[int, int]:
    """The positions (i, j), i < j, of pair ``pair_index`` in the sorted state.

    Pairs go in colex order (0,1), (0,2), (1,2), (0,3), (1,3), (2,3), ..."""
    # Colex order (0,1), (0,2), (1,2), (0,3), ...: a k-number state's pairs are exactly the first
    # k(k-1)/2, so an action index means the same thing at every depth and for every width.
    j = 1
    while pair_index >= j:
        pair_index -= j
        j += 1
    return pair_index, j


def step_action_width(num_numbers: int) -> int:
    """Number of step actions for puzzles of ``num_numbers`` numbers: pairs x 6 (4 -> 36)."""
    return num_numbers * (num_numbers - 1) // 2 * NUM_STEP_OPS


def _decode_action(
    numbers: State, action: int
) -> tuple[int, int, Fraction, str, Fraction, Fraction | None] | None:
    """(i, j, left, op, right, result or None if illegal); None if the pair is out of range.

    Action ``p * 6 + k`` takes pair ``p`` = (i, j), i < j in colex order, of the sorted state
    with a = numbers[i] <= b = numbers[j], and op ``k`` of [a+b, a-b, b-a, a*b, a/b, b/a]."""
    i, j = step_pair(action // NUM_STEP_OPS)
    if j >= len(numbers):
        return None
    swap, op = _STEP_OPS[action % NUM_STEP_OPS]
    left, right = (numbers[j], numbers[i]) if swap else (numbers[i], numbers[j])
    return i, j, left, op, right, _combine(left, op, right)


def _check_width(width: int) -> None:
    if width < 0 or width % NUM_STEP_OPS:
        raise ValueError(f"width must be a multiple of {NUM_STEP_OPS}, got {width}")


def legal_step_mask(numbers: Sequence[Fraction | int], width: int) -> list[bool]:
    """[width] True where the action is legal on the sorted state ``numbers``: its pair exists,
    the result is non-negative and it does not divide by zero."""
    _check_width(width)
    state = tuple(map(Fraction, numbers))
    mask = []
    for action in range(width):
        decoded = _decode_action(state, action)
        mask.append(decoded is not None and decoded[-1] is not None)
    return mask


def apply_step(numbers: Sequence[Fraction | int], action: int) -> tuple[State, str]:
    """(the sorted state after ``action``, its step text like ``"3/4=3|4"``).
    Raises ValueError for an action that `legal_step_mask` marks illegal."""
    state = tuple(map(Fraction, numbers))
    decoded = _decode_action(state, action) if action >= 0 else None
    if decoded is None or decoded[-1] is None:
        raise ValueError(
            f"action {action} is illegal on {' '.join(map(literal, state))}; "
            "legal actions are those where legal_step_mask(...) is True"
        )
    i, j, left, op, right, result = decoded
    rest = [x for index, x in enumerate(state) if index not in (i, j)]
    insort(rest, result)
    return tuple(rest), f"{literal(left)}{op}{literal(right)}={literal(result)}"


def completion_numbers(puzzle: Puzzle, completion_prefix: str) -> State | None:
    """The sorted multiset left after the complete steps ``completion_prefix`` (a trailing ","
    is allowed; "" means no steps), or None if any step is invalid."""
    steps = completion_prefix.removesuffix(",")
    return _state_after(puzzle.numbers, tuple(steps.split(",")) if steps else ())


def reachable(puzzle: Puzzle, completion_prefix: str) -> bool:
    """Whether the complete steps ``completion_prefix`` (as `completion_numbers` reads them)
    are valid and leave numbers that can still make the target: the exact label a learned
    verifier of partial solutions is trained on."""
    state = completion_numbers(puzzle, completion_prefix)
    return state is not None and _solvable(state, Fraction(puzzle.target))


# --- solver -------------------------------------------------------------------------------------


def _moves(state: State) -> Iterator[tuple[str, State]]:
    """Distinct (step text, next state) from ``state``, in action order."""
    seen = set()
    for action in range(step_action_width(len(state))):
        i, j, left, op, right, result = _decode_action(state, action)
        if result is None:
            continue
        text = f"{literal(left)}{op}{literal(right)}={literal(result)}"
        if text not in seen:
            seen.add(text)
            rest = [*state[:i], *state[i + 1 : j], *state[j + 1 :]]
            insort(rest, result)
            yield text, tuple(rest)


@lru_cache(maxsize=1 << 20)
def _solvable(state: State, target: Fraction) -> bool:
    # Memoised on the sorted multiset: Countdown-24's 1820 puzzles share most of their subtrees.
    if len(state) == 1:
        return state[0] == target
    if len(state) == 2:
        a, b = state
        return any(_combine(x, op, y) == target for x, y in ((a, b), (b, a)) for op in OPERATORS)
    return any(_solvable(after, target) for _, after in _moves(state))


def solutions(
    numbers: Sequence[int], target: int = 24, limit: int = 10, rng: random.Random | None = None
) -> list[list[str]]:
    """Up to ``limit`` distinct solutions, each a list of step texts, by depth-first search in
    action order (or in an order shuffled by ``rng``, for varied training data)."""
    start, goal = _start(numbers), Fraction(target)
    found: list[list[str]] = []

    def search(state: State, steps: list[str]) -> None:
        if len(state) == 1:
            found.append(list(steps))
            return
        moves = list(_moves(state))
        if rng is not None:
            rng.shuffle(moves)
        for text, after in moves:
            if len(found) >= limit:
                return
            if _solvable(after, goal):
                steps.append(text)
                search(after, steps)
                steps.pop()

    if limit > 0 and _solvable(start, goal):
        search(start, [])
    return found


def solve(numbers: Sequence[int], target: int = 24) -> list[str] | None:
    """The canonical solution (the first in action order) as step texts, or None."""
    found = solutions(numbers, target, limit=1)
    return found[0] if found else None


# --- puzzle sets ----------------------------------------------------------------------------------


def countdown24_puzzles() -> list[Puzzle]:
    """The 1362 solvable multisets of four numbers from 1..13 with target 24, sorted."""
    return [
        Puzzle(numbers, 24)
        for numbers in combinations_with_replacement(range(1, 14), 4)
        if _solvable(_start(numbers), Fraction(24))
    ]


def _test_side_score(numbers: tuple[int, ...], seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{numbers}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_puzzles(
    puzzles: Iterable[Puzzle], test_fraction: float = 0.2, seed: int = 0
) -> tuple[list[Puzzle], list[Puzzle]]:
    """(train, test), each sorted. A puzzle's side is a seeded hash of its numbers alone, so it
    does not depend on list order or on the other puzzles, and one multiset never appears on both
    sides (even with different targets). The test side holds about ``test_fraction``."""
    if not 0.0 <= test_fraction <= 1.0:
        raise ValueError(f"test_fraction must be in [0, 1], got {test_fraction}")
    train, test = [], []
    for puzzle in puzzles:
        is_test = _test_side_score(puzzle.numbers, seed) < test_fraction
        (test if is_test else train).append(puzzle)
    return sorted(train), sorted(test)


def general_countdown_puzzles(
    num_numbers: int = 5,
    max_number: int = 13,
    targets: Iterable[int] = range(10, 100),
    count: int = 100,
    seed: int = 0,
) -> list[Puzzle]:
    """``count`` distinct puzzles, sorted: the difficulty dial beyond Countdown-24.

    Numbers are drawn uniformly from 1..max_number (with repetition). The target is the last
    number of a random walk of legal steps (each step uniform over the legal actions), kept only
    if it is an integer in ``targets``; so every puzzle is solvable by construction, without
    running the solver (slow past five numbers). Targets reachable in many ways are favoured."""
    if num_numbers < 2 or max_number < 1 or count < 0:
        raise ValueError(
            f"need num_numbers >= 2, max_number >= 1, count >= 0; got {num_numbers}, "
            f"{max_number}, {count}"
        )
    allowed_targets = targets if isinstance(targets, range) else frozenset(targets)
    rng = random.Random(seed)
    width = step_action_width(num_numbers)
    found: set[Puzzle] = set()
    for _ in range(1000 * max(count, 1)):
        if len(found) >= count:
            return sorted(found)
        numbers = tuple(sorted(rng.randint(1, max_number) for _ in range(num_numbers)))
        state = _start(numbers)
        while len(state) > 1:
            legal = [a for a, ok in enumerate(legal_step_mask(state, width)) if ok]
            state, _ = apply_step(state, rng.choice(legal))
        if state[0].denominator == 1 and int(state[0]) in allowed_targets:
            found.add(Puzzle(numbers, int(state[0])))
    raise ValueError(
        f"found only {len(found)} of {count} puzzles with targets in {targets}; widen the targets"
    )


# --- grammar for constrained decoding -----------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _state_after(numbers: tuple[int, ...], steps: tuple[str, ...]) -> State | None:
    # Recursive on the step prefix, so decoding a completion replays each step once.
    if not steps:
        return _start(numbers)
    state = _state_after(numbers, steps[:-1])
    return None if state is None else _check_step(state, steps[-1])[0]


def _continuations(prefix: str, literals: Iterable[str]) -> set[str]:
    """The characters that extend ``prefix`` towards one of ``literals``."""
    return {
        text[len(prefix)]
        for text in literals
        if len(text) > len(prefix) and text.startswith(prefix)
    }


def allowed_next(puzzle: Puzzle, completion_prefix: str) -> frozenset[str]:
    """Characters (or ``"<eos>"``) that keep ``completion_prefix`` the prefix of a well-formed
    completion with correct arithmetic; empty if the prefix is already invalid. The final value
    is not checked against the target (`verify` does that)."""
    return _allowed_next(puzzle.numbers, completion_prefix)


# Keyed on the numbers only: the grammar does not depend on the target.
@lru_cache(maxsize=1 << 18)
def _allowed_next(numbers: tuple[int, ...], prefix: str) -> frozenset[str]:
    *done, partial = prefix.split(",")
    state = _state_after(numbers, tuple(done))
    match = _PARTIAL_STEP.fullmatch(partial)
    if state is None or len(state) < 2 or match is None:
        return _NOTHING
    first, op, second, written = match.groups()
    literals = [literal(x) for x in state]
    rest = list(state)
    left = _remove_literal(rest, first)
    if op is None:
        allowed = _continuations(first, literals)
        if left is not None:  # a complete first operand: the ops some second operand allows
            allowed |= {o for o in OPERATORS if any(_combine(left, o, b) is not None for b in rest)}
        return frozenset(allowed)
    if left is None:
        return _NOTHING
    # Second operands: any other number that keeps the result legal (b <= a for "-", b != 0 for "/").
    seconds = {literal(b): b for b in rest if _combine(left, op, b) is not None}
    if written is None:
        allowed = _continuations(second, seconds)
        if second in seconds:
            allowed.add("=")
        return frozenset(allowed)
    if second not in seconds:
        return _NOTHING
    result = literal(_combine(left, op, seconds[second]))
    if written == result:
        return frozenset({"," if len(state) > 2 else EOS})
    return frozenset(_continuations(written, [result]))
