"""Verifiers as rewards: ``verifier(prompt, completion) -> VerifierResult(reward, status, detail)``.

Statuses: "ok" (correct, reward 1.0) and, all with reward 0.0, "wrong" (well formed but not the
answer: a false assertion, a wrong final value), "invalid" (breaks the task's rules or cannot be
read: malformed text, a number not available, an unreadable prompt), "timeout", "crash" (the
program raised or exited early) and "memory" (the program ran out of its memory limit).

`reward_function(verifier)` wraps any verifier as a TRL-style reward function and counts the
statuses in ``.stats`` so training can report *why* rewards are zero.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

from llm_bridge.assert_tests import AssertTest, passes, split_tests
from llm_bridge.sandbox import MAX_REPLY_BYTES, Containment, run_in_sandbox
from llm_bridge.tasks import countdown

STATUSES = ("ok", "wrong", "invalid", "timeout", "crash", "memory")


class VerifierResult(NamedTuple):
    """reward: 1.0 if status is "ok", else 0.0. status: one of `STATUSES`.
    detail: a short human-readable reason ("ok" when correct)."""

    reward: float
    status: str
    detail: str


def _result(status: str, detail: str) -> VerifierResult:
    return VerifierResult(1.0 if status == "ok" else 0.0, status, detail)


class Verifier(Protocol):
    def __call__(self, prompt: str, completion: str) -> VerifierResult: ...


def _read_puzzle(prompt: str, target: int | None) -> countdown.Puzzle | VerifierResult:
    """The puzzle at the end of ``prompt``, or an "invalid" result saying what is wrong."""
    try:
        puzzle = countdown.Puzzle.from_prompt(prompt)
    except ValueError as error:
        return _result("invalid", f"bad prompt: {error}")
    if target is not None and puzzle.target != target:
        return _result("invalid", f"bad prompt: target {puzzle.target}, expected {target}")
    return puzzle


class CountdownVerifier:
    """Countdown step completions (``"3/4=3|4,1-3|4=1|4,6/1|4=24"``) for prompts like
    ``"1 3 4 6>24:"``; see `llm_bridge.tasks.countdown` for the formats.

    target: None reads the target from each prompt; an int also requires every prompt to state
    it (a guard against feeding the wrong data set). A wrong final value is "wrong"; any broken
    rule is "invalid"."""

    def __init__(self, *, target: int | None = None):
        self.target = target

    def __call__(self, prompt: str, completion: str) -> VerifierResult:
        puzzle = _read_puzzle(prompt, self.target)
        if isinstance(puzzle, VerifierResult):
            return puzzle
        verdict = countdown.verify(puzzle, completion)
        if verdict.correct:
            return _result("ok", "ok")
        return _result("wrong" if verdict.well_formed else "invalid", verdict.reason)


class _Rejected(Exception):
    """An expression outside the allowed arithmetic."""


_BINARY_OPS: dict[type, Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}


def _evaluate(node: ast.AST, used: list[int]) -> Fraction:
    """Exact value of ``node``; appends each integer literal to ``used``."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OPS:
        left, right = _evaluate(node.left, used), _evaluate(node.right, used)
        if isinstance(node.op, ast.Div) and right == 0:
            raise _Rejected("division by zero")
        return _BINARY_OPS[type(node.op)](left, right)
    # Unary minus, powers, names, calls, floats, ...: not part of the game.
    name = type(node.op if isinstance(node, (ast.BinOp, ast.UnaryOp)) else node).__name__
    raise _Rejected(f"{name} is not allowed, only integers, + - * / and ( )")


class ArithmeticVerifier:
    """A plain expression such as ``"(8-4)*(3+3)"`` for prompts like ``"3 3 4 8>24:"``.

    Parsed with `ast` (never evaluated by Python), computed exactly with Fractions; it must use
    each given number exactly once and equal the target. Unlike the step format, intermediate
    values may be negative. Surrounding whitespace is ignored; nothing else may accompany the
    expression (extracting it from a longer answer is the caller's job).

    target: as for `CountdownVerifier`. max_length: longer completions are "invalid" (bounds the
    parser's work on adversarial text)."""

    def __init__(self, *, target: int | None = None, max_length: int = 200):
        self.target = target
        self.max_length = max_length

    def __call__(self, prompt: str, completion: str) -> VerifierResult:
        puzzle = _read_puzzle(prompt, self.target)
        if isinstance(puzzle, VerifierResult):
            return puzzle
        expression = completion.strip()
        if len(expression) > self.max_length:
            return _result("invalid", f"expression longer than {self.max_length} characters")
        used: list[int] = []
        try:
            value = _evaluate(ast.parse(expression, mode="eval").body, used)
        except _Rejected as error:
            return _result("invalid", str(error))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return _result("invalid", f"not an arithmetic expression: {expression!r}")
        if sorted(used) != list(puzzle.numbers):
            return _result(
                "invalid",
                f"uses {sorted(used)}, must use each of {list(puzzle.numbers)} exactly once",
            )
        if value != puzzle.target:
            return _result("wrong", f"{expression} = {countdown.literal(value)} != {puzzle.target}")
        return _result("ok", "ok")


class PythonTestVerifier:
    """Runs a completion (Python source) in `llm_bridge.sandbox` and judges it by assert tests.

    The tests are, in order of precedence: the call's ``tests=`` (e.g. a dataset column
    forwarded by `reward_function`), the constructor's ``tests=``, else the prompt itself. They
    must be asserts that `split_tests` accepts (``assert add(1, 2) == 3``), else ValueError,
    raised at construction for the constructor's tests and before anything runs otherwise: a
    test that cannot be judged safely is a data set error, not a zero reward.

    Why split: the program's process can write anything anywhere it has access to and replace
    anything in its own interpreter, so it decides nothing. It runs its code then evaluates
    each call and sends the value back as JSON; the verifier (this process) compares the parsed
    plain data with the expected values, which never enter the program's process. Hence
    "ok" only when every value really passes: a value that is not plain data (an object with
    an ``__eq__`` that always says True, a subclass of int, a set) fails as "wrong", and a
    reply that does not parse, or exceeds `sandbox.MAX_REPLY_BYTES`, is a "crash".

    Statuses: "ok"; "wrong" (a value fails its test; the detail names the first failing
    assert: ``"assert add(1, 2) == 3: got 0"``); "crash" (the program or a call raised, the
    program exited before its tests finished, the reply was malformed); "memory" (a
    MemoryError); "timeout" (past ``timeout_s`` seconds of wall clock, interpreter start
    included). Runs stop at the first failing test. Never raises on the program's behaviour.

    memory_mb: the program's address space. containment: what the sandbox may use, None for
    the strongest the machine allows (`sandbox.available_containment`); its module docstring
    says what each protection contains and what stays uncontained without root."""

    def __init__(
        self,
        *,
        tests: str | None = None,
        timeout_s: float = 2.0,
        memory_mb: int = 256,
        containment: Containment | None = None,
    ):
        self.tests = tests
        if tests is not None:
            split_tests(tests)
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.containment = containment

    def __call__(self, prompt: str, completion: str, *, tests: str | None = None) -> VerifierResult:
        source = tests if tests is not None else self.tests if self.tests is not None else prompt
        asserts = split_tests(source)
        try:
            return self._run(completion, asserts)
        except Exception as error:  # a reward must never stop training: report, don't raise
            return _result("crash", f"verifier could not run the program: {error!r}")

    def _run(self, program: str, asserts: tuple[AssertTest, ...]) -> VerifierResult:
        calls = [test.call for test in asserts if test.call is not None]
        run = run_in_sandbox(
            program,
            calls,
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            containment=self.containment,
            enough=lambda reply: _verdict(asserts, reply, ended=None) is not None,
        )
        verdict = _verdict(asserts, run.reply, ended=None)
        if verdict is None and run.timed_out:
            return _result("timeout", f"still running after {self.timeout_s} s")
        return verdict or _verdict(asserts, run.reply, ended=run.ended or "ended")


def _verdict(
    asserts: tuple[AssertTest, ...], reply: bytes, *, ended: str | None
) -> VerifierResult | None:
    """The result the reply (untrusted bytes) decides, or None if it needs more of it.
    ended: None while the program may still write, else how its process ended."""
    if len(reply) > MAX_REPLY_BYTES:
        return _result("crash", f"the program replied more than {MAX_REPLY_BYTES} bytes")
    entries = iter(reply.split(b"\n")[:-1])  # complete lines only
    entry = _entry(next(entries, None))
    if not entry or entry[0] != "ran":
        return _failed(entry, "the program", ended, "before its tests ran")
    for test in asserts:
        value = test.expected
        if test.call is not None:
            entry = _entry(next(entries, None))
            if not entry or entry[0] != "value":
                return _failed(entry, test.statement, ended, "before this test finished")
            value = entry[1]
        if not passes(test, value):
            return _result("wrong", f"{test.statement}: got {_show(value)}")
    return _result("ok", "ok")


def _entry(line: bytes | None) -> list | None:
    """A reply line as a well-formed entry, ``[]`` if malformed, None if not there (yet)."""
    if line is None:
        return None
    try:  # NaN and Infinity parse (the candidate writes them), and NaN then equals nothing
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return []
    shapes = {"ran": (), "exited": (), "raised": (str, str), "unplain": (str,), "value": None}
    if not isinstance(entry, list) or not entry or entry[0] not in shapes:
        return []
    kinds = shapes[entry[0]]
    if kinds is None:
        return entry if len(entry) == 2 else []
    ok = len(entry) == 1 + len(kinds) and all(map(isinstance, entry[1:], kinds))
    return entry if ok else []


def _failed(entry: list | None, what: str, ended: str | None, when: str) -> VerifierResult | None:
    """The result of an entry that is not the expected "ran" / "value" (None: still to come)."""
    if entry is None:
        return None if ended is None else _result("crash", f"{what}: stopped {when} ({ended})")
    if not entry:
        return _result("crash", f"{what}: malformed reply from the program")
    if entry[0] == "raised":
        status = "memory" if entry[1] == "MemoryError" else "crash"
        return _result(status, f"{what}: {entry[1]}: {_shorten(entry[2])}")
    if entry[0] == "unplain":
        return _result(
            "wrong",
            f"{what}: returned {_shorten(entry[1])}, not plain data (numbers, strings, bools, "
            "None, lists and str-keyed dicts)",
        )
    if entry[0] == "exited":
        return _result("crash", f"{what}: the program exited {when}")
    return _result("crash", f"{what}: malformed reply from the program")  # "ran" twice, ...


def _show(value: Any) -> str:
    try:
        return _shorten(repr(value))
    except RecursionError:  # nested deeper than repr goes
        return "a deeply nested value"


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class VerifierStats:
    """counts: results per status since the last `reset`. last_detail: the latest detail seen
    for each status, a concrete example to put next to a count in a log."""

    counts: Counter[str] = field(default_factory=Counter)
    last_detail: dict[str, str] = field(default_factory=dict)

    def record(self, result: VerifierResult) -> None:
        self.counts[result.status] += 1
        self.last_detail[result.status] = result.detail

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def reset(self) -> None:
        self.counts.clear()
        self.last_detail.clear()

    def summary(self) -> str:
        """``"ok 3/8, wrong 4 (final 23 != 24), invalid 1 (malformed step 'x')"``."""
        parts = [f"ok {self.counts['ok']}/{self.total}"]
        for status in STATUSES[1:]:
            if self.counts[status]:
                parts.append(f"{status} {self.counts[status]} ({self.last_detail[status]})")
        return ", ".join(parts)


def _text(message: Any) -> str:
    """TRL passes plain strings, or for chat data a list of {"role", "content"} messages."""
    if isinstance(message, str):
        return message
    if isinstance(message, list) and message and isinstance(message[-1], dict):
        return str(message[-1].get("content", ""))
    return str(message)


def reward_function(
    verifier: Callable[..., VerifierResult],
    *,
    column_kwargs: Sequence[str] = (),
    num_workers: int = 1,
) -> Callable[..., list[float]]:
    """``f(prompts, completions, **kwargs) -> rewards`` in the form TRL's GRPOTrainer calls.

    column_kwargs: dataset columns (arriving as lists in ``kwargs``) passed row by row to the
    verifier as keyword arguments, e.g. ``("tests",)`` for `PythonTestVerifier`; other kwargs
    are ignored. num_workers: threads verifying in parallel (worth it for subprocess verifiers).
    ``f.stats`` is a `VerifierStats` accumulating over calls; ``f.__name__`` names the reward in
    TRL's logs."""

    stats = VerifierStats()

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        if len(prompts) != len(completions):
            raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
        missing = [name for name in column_kwargs if name not in kwargs]
        if missing:
            raise ValueError(f"columns {missing} not passed; got {sorted(kwargs)}")

        def check(row: int) -> VerifierResult:
            extra = {name: kwargs[name][row] for name in column_kwargs}
            return verifier(_text(prompts[row]), _text(completions[row]), **extra)

        rows = range(len(prompts))
        if num_workers > 1:
            with ThreadPoolExecutor(num_workers) as pool:
                results = list(pool.map(check, rows))
        else:
            results = [check(row) for row in rows]
        for result in results:
            stats.record(result)
        return [result.reward for result in results]

    reward.stats = stats  # type: ignore[attr-defined]
    reward.__name__ = f"{type(verifier).__name__}_reward"
    return reward
