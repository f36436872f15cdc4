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
import contextlib
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

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


# Runs in the child: sets the limits, executes the program and writes its status to a file.
# Limits are set here rather than in a Popen preexec_fn, which is unsafe when the caller has
# threads (`reward_function(num_workers=...)`); they still apply before any program code runs.
# The status file, not the exit code, marks success, so a program that calls exit(0) or
# os._exit(0) before its tests have run does not pass; os._exit at the end skips the program's
# atexit hooks and lingering threads.
_RUNNER = """
import os, resource, sys, traceback
source_path, status_path, memory_bytes, cpu_seconds, file_bytes = sys.argv[1:]
for which, value in ((resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_CPU, cpu_seconds),
                     (resource.RLIMIT_FSIZE, file_bytes), (resource.RLIMIT_CORE, 0)):
    hard = resource.getrlimit(which)[1]  # an unprivileged process cannot raise its hard limit
    value = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
    resource.setrlimit(which, (value, value))
status_file = open(status_path, "w")
status = "ok"
try:
    with open(source_path, encoding="utf-8") as source:
        exec(compile(source.read(), "<program>", "exec"), {"__name__": "__main__"})
except BaseException as error:
    status = (
        "wrong" if isinstance(error, AssertionError)
        else "memory" if isinstance(error, MemoryError)
        else "exit" if isinstance(error, SystemExit)
        else "crash"
    )
    try:
        traceback.print_exc(limit=-3)
    except BaseException:
        pass
status_file.write(status)
status_file.close()
sys.stderr.flush()
os._exit(0)
"""
_MAX_FILE_BYTES = 16 << 20  # the program's files (and its stderr) stay small
_POLL_S = 0.005


def _tail(path: str, limit: int = 400) -> str:
    """The last non-empty line of the file at ``path``, at most ``limit`` characters."""
    with open(path, "rb") as file:
        file.seek(0, os.SEEK_END)
        file.seek(max(0, file.tell() - 4096))
        lines = file.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1][-limit:] if lines else ""


class PythonTestVerifier:
    """Runs ``completion + "\\n\\n" + tests`` (Python source) in a fresh ``python -I`` subprocess.

    The test code is, in order of precedence: the call's ``tests=`` (e.g. a dataset column
    forwarded by `reward_function`), the constructor's ``tests=``, else the prompt itself. Tests
    are plain ``assert`` statements; a failed assertion is "wrong", a MemoryError is "memory",
    any other exception (SyntaxError included) or an early exit is "crash", and running past
    ``timeout_s`` seconds of wall clock is "timeout".

    Limits: address space ``memory_mb`` MiB, CPU time and file size; no stdin, stdout discarded,
    a minimal environment, its own process group (killed afterwards with everything the program
    started). This guards a training run against accidents (loops, huge allocations, exits),
    not against deliberately hostile code: it is not a sandbox. Never raises."""

    def __init__(self, *, tests: str | None = None, timeout_s: float = 2.0, memory_mb: int = 256):
        self.tests = tests
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb

    def __call__(self, prompt: str, completion: str, *, tests: str | None = None) -> VerifierResult:
        tests = tests if tests is not None else self.tests if self.tests is not None else prompt
        try:
            return self._run(f"{completion}\n\n{tests}\n")
        except Exception as error:  # a reward must never stop training: report, don't raise
            return _result("crash", f"verifier could not run the program: {error!r}")

    def _run(self, program: str) -> VerifierResult:
        with tempfile.TemporaryDirectory(prefix="verifier_") as directory:
            source, status, stderr = (
                os.path.join(directory, name) for name in ("program.py", "status", "stderr")
            )
            with open(source, "w", encoding="utf-8", errors="replace") as file:
                file.write(program)
            limits = (self.memory_mb << 20, math.ceil(self.timeout_s) + 1, _MAX_FILE_BYTES)
            with open(stderr, "wb") as stderr_file:
                process = subprocess.Popen(
                    [sys.executable, "-I", "-c", _RUNNER, source, status, *map(str, limits)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr_file,
                    cwd=directory,
                    env={"PATH": os.defpath},
                    start_new_session=True,  # its own process group, never the caller's
                )
                try:
                    timed_out = not _wait_unreaped(process.pid, self.timeout_s)
                finally:
                    # Still unreaped, so its pid (= the group id) cannot have been reused.
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            if timed_out:
                return _result("timeout", f"still running after {self.timeout_s} s")
            written = ""
            if os.path.exists(status):
                with open(status) as file:
                    written = file.read()
            return _classify(written, process.returncode, _tail(stderr))


def _wait_unreaped(pid: int, timeout_s: float) -> bool:
    """Waits up to ``timeout_s`` for ``pid`` to exit, leaving it unreaped; True if it exited."""
    deadline = time.monotonic() + timeout_s
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


def _classify(status: str, returncode: int, error: str) -> VerifierResult:
    if status == "ok" and returncode == 0:
        return _result("ok", "ok")
    if status == "wrong":
        return _result("wrong", error or "AssertionError")
    if status == "memory" or "MemoryError" in error:
        return _result("memory", error or "MemoryError")
    if status == "exit":
        return _result("crash", "the program exited before its tests finished")
    if status == "crash":
        return _result("crash", error)
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return _result("crash", f"killed by signal {name} {error}".strip())
    return _result(
        "crash", f"exited with code {returncode} before its tests finished {error}".strip()
    )


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
