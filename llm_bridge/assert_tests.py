"""Assert tests split for judging outside the tested program's process.

``assert add(1, 2) == 3`` becomes an `AssertTest`: the call ``"add(1, 2)"``, which the
program's process evaluates, and the check ``== 3``, which `passes` applies here to the
returned value once it is plain data. Used by `llm_bridge.verifiers.PythonTestVerifier`.
"""

from __future__ import annotations

import ast
import builtins
import functools
from collections.abc import Callable
from typing import Any, NamedTuple


class AssertTest(NamedTuple):
    """One ``assert`` statement split so that the program computes a value and the verifier
    judges it: ``assert add(1, 2) == 3`` is call ``"add(1, 2)"``, check ``"=="``, expected 3.

    statement: the assert's source, for messages. call: expression source the program's
    process evaluates, or None for a constant (``assert True``), judged on ``expected`` alone.
    check: one of `CHECKS`. expected: the literal operand as plain data (tuples as lists);
    for "truthy" / "falsy" the constant or None. call_on_left: whether the call is the left
    operand (``3 == add(1, 2)`` has it on the right; it matters for ``<`` and ``in``)."""

    statement: str
    call: str | None
    check: str
    expected: Any
    call_on_left: bool


_COMPARISONS: dict[type, tuple[str, Callable[[Any, Any], bool]]] = {
    ast.Eq: ("==", lambda a, b: a == b),
    ast.NotEq: ("!=", lambda a, b: a != b),
    ast.Lt: ("<", lambda a, b: a < b),
    ast.LtE: ("<=", lambda a, b: a <= b),
    ast.Gt: (">", lambda a, b: a > b),
    ast.GtE: (">=", lambda a, b: a >= b),
    ast.In: ("in", lambda a, b: a in b),
    ast.NotIn: ("not in", lambda a, b: a not in b),
}
_CHECK_FUNCTIONS = {name: function for name, function in _COMPARISONS.values()}
CHECKS = (*_CHECK_FUNCTIONS, "truthy", "falsy")
_ACCEPTED = (
    "accepted: one assert per statement, of the form `assert f(...) <op> LITERAL` or "
    "`assert LITERAL <op> f(...)` with <op> one of == != < <= > >= in, not in, or "
    "`assert f(...)` / `assert not f(...)`, where f is a name the program defines (not a "
    "builtin) and LITERAL a Python literal of plain data (numbers, strings, bools, None, and "
    "lists, tuples and str-keyed dicts of them)"
)
_BUILTIN_NAMES = frozenset(dir(builtins))


def split_tests(source: str) -> tuple[AssertTest, ...]:
    """The assert statements of ``source``, split; raises ValueError naming the first
    statement that does not split (with the accepted forms), or if there is none at all.

    Only the call leaves the verifier: the program controls every name it is evaluated with,
    so anything else in it (a builtin such as ``sorted``, a comparison, an ``__eq__``) could
    be the program's own; the expected value and the comparison stay here."""
    return _split_tests(source)


@functools.lru_cache(maxsize=4096)  # datasets repeat tests across samples
def _split_tests(source: str) -> tuple[AssertTest, ...]:
    try:
        module = ast.parse(source)
    except SyntaxError as error:
        raise ValueError(
            f"tests {source[:200]!r} are not valid Python ({error}); {_ACCEPTED}"
        ) from None
    tests = tuple(_split(statement) for statement in module.body)
    if not tests:
        raise ValueError(f"no assert statement in tests {source[:200]!r}; {_ACCEPTED}")
    return tests


def _split(statement: ast.stmt) -> AssertTest:
    text = ast.unparse(statement)
    if not isinstance(statement, ast.Assert):
        raise ValueError(f"cannot split test {text!r}: not an assert; {_ACCEPTED}")
    test = statement.test
    try:
        if isinstance(test, ast.Compare):
            return _split_comparison(text, test)
        check, operand = ("falsy", test.operand) if _is_not(test) else ("truthy", test)
        if _literal(operand) is not _NOT_LITERAL:
            return AssertTest(text, None, check, _literal(operand), True)
        return AssertTest(text, _call_source(operand), check, None, True)
    except _Unsplittable as error:
        raise ValueError(f"cannot split test {text!r}: {error}; {_ACCEPTED}") from None


class _Unsplittable(Exception):
    """Why an assert's expression does not split."""


_NOT_LITERAL = object()


def _is_not(node: ast.expr) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def _split_comparison(text: str, test: ast.Compare) -> AssertTest:
    if len(test.ops) != 1:
        raise _Unsplittable("chained comparison")
    if type(test.ops[0]) not in _COMPARISONS:
        raise _Unsplittable(f"operator {type(test.ops[0]).__name__} is not supported")
    check = _COMPARISONS[type(test.ops[0])][0]
    left, right = test.left, test.comparators[0]
    expected = _literal(right)
    if expected is not _NOT_LITERAL:
        return AssertTest(text, _call_source(left), check, expected, True)
    expected = _literal(left)
    if expected is not _NOT_LITERAL:
        return AssertTest(text, _call_source(right), check, expected, False)
    raise _Unsplittable("neither side is a literal")


def _call_source(node: ast.expr) -> str:
    """Source of ``f(...)`` or ``f`` where f is a plain name that is not a builtin."""
    callee = node.func if isinstance(node, ast.Call) else node
    if not isinstance(callee, ast.Name):
        raise _Unsplittable(f"{ast.unparse(node)!r} is not a call of a plain name")
    if callee.id in _BUILTIN_NAMES:
        raise _Unsplittable(f"{callee.id!r} is a builtin, which the program could replace")
    return ast.unparse(node)


def _literal(node: ast.expr) -> Any:
    """The node's value as plain data if it is a plain literal, else ``_NOT_LITERAL``."""
    try:
        return _plain_literal(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _plain_literal(value: Any) -> Any:
    """``value`` in the form a JSON round trip gives (tuples as lists); ValueError if it has
    none (sets, bytes, complex, dicts with keys that are not str)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) in (list, tuple):
        return [_plain_literal(item) for item in value]
    if type(value) is dict and all(type(key) is str for key in value):
        return {key: _plain_literal(item) for key, item in value.items()}
    raise ValueError(f"{type(value).__name__} is not plain data")


def passes(test: AssertTest, value: Any) -> bool:
    """Whether ``value`` (plain data from a trusted JSON parse) passes ``test``: Python's own
    comparison of plain data, so NaN equals nothing and 1 == 1.0 == True."""
    if test.check in ("truthy", "falsy"):
        return bool(value) == (test.check == "truthy")
    left, right = (value, test.expected) if test.call_on_left else (test.expected, value)
    try:
        return bool(_CHECK_FUNCTIONS[test.check](left, right))
    except (TypeError, RecursionError):  # e.g. [1] < 2: the assert would have raised
        return False
