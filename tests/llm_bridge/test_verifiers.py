"""Verifiers: Countdown steps, arithmetic expressions, Python tests in a subprocess, rewards."""

import inspect
import os
import time

import pytest

import llm_bridge.verifiers
from llm_bridge.assert_tests import AssertTest, split_tests
from llm_bridge.verifiers import (
    STATUSES,
    ArithmeticVerifier,
    CountdownVerifier,
    PythonTestVerifier,
    VerifierResult,
    VerifierStats,
    reward_function,
)

PROMPT = "1 3 4 6>24:"


@pytest.mark.parametrize(
    ("completion", "status"),
    [
        ("3/4=3|4,1-3|4=1|4,6/1|4=24", "ok"),
        ("6*4=24,3-1=2,24+2=26", "wrong"),
        ("6*4=25,3-1=2,25-2=23", "invalid"),
        ("6*4=24", "invalid"),
        ("(6/(1-3/4))", "invalid"),
    ],
)
def test_countdown_verifier_statuses(completion, status):
    result = CountdownVerifier()(PROMPT, completion)
    assert result.status == status
    assert result.reward == (1.0 if status == "ok" else 0.0)


def test_countdown_verifier_reads_the_puzzle_from_the_prompt():
    verifier = CountdownVerifier()
    assert verifier("Make the target.\n2 5>7:", "2+5=7").status == "ok"
    assert verifier("what?", "2+5=7") == (0.0, "invalid", verifier("what?", "").detail)
    assert verifier("what?", "2+5=7").detail.startswith("bad prompt")


def test_countdown_verifier_with_a_target_rejects_other_targets():
    verifier = CountdownVerifier(target=24)
    assert verifier("2 5>7:", "2+5=7").status == "invalid"
    assert verifier(PROMPT, "3/4=3|4,1-3|4=1|4,6/1|4=24").status == "ok"


@pytest.mark.parametrize(
    ("prompt", "completion", "status"),
    [
        ("3 3 4 8>24:", "(8-4)*(3+3)", "ok"),
        ("3 3 4 8>24:", " (8 - 4) * (3 + 3)\n", "ok"),
        (PROMPT, "6/(1-3/4)", "ok"),
        ("1 2 5 7>24:", "(1-5)*(2-7)+4", "invalid"),  # 4 is not given
        ("1 2 5 7>24:", "(1-2)*(5-7)", "wrong"),  # 2: negative intermediates are fine
        ("3 3 4 8>24:", "8*3", "invalid"),  # 3 and 4 unused
        ("3 3 4 8>24:", "(8-4)*3*3*3", "invalid"),  # 3 used three times
        ("3 3 4 8>24:", "-(8-4)*(3+3)", "invalid"),
        ("3 3 4 8>24:", "(8-4)**3+3", "invalid"),
        ("3 3 4 8>24:", "__import__('os').system('true')", "invalid"),
        ("3 3 4 8>24:", "8/(4-4)*3*3", "invalid"),
        ("3 3 4 8>24:", "8.0*3", "invalid"),
        ("3 3 4 8>24:", "(" * 5000 + "8", "invalid"),
        ("3 3 4 8>24:", "8*3=24", "invalid"),
    ],
)
def test_arithmetic_verifier(prompt, completion, status):
    assert ArithmeticVerifier()(prompt, completion).status == status


def test_arithmetic_verifier_is_exact():
    result = ArithmeticVerifier()("1 5 5 5>24:", "5*(5-1/5)")
    assert result == (1.0, "ok", "ok")


def test_python_verifier_passes_correct_code():
    verifier = PythonTestVerifier()
    result = verifier("assert add(2, 3) == 5", "def add(a, b):\n    return a + b")
    assert result == (1.0, "ok", "ok")


def test_python_verifier_failed_assertion_is_wrong_and_names_the_first_failing_assert():
    tests = "assert add(1, 1) == 0\nassert add(2, 3) == 5\nassert add(0, 0) == 1"
    result = PythonTestVerifier()(tests, "def add(a, b):\n    return a - b")
    assert result == (0.0, "wrong", "assert add(2, 3) == 5: got -1")


def test_python_verifier_exception_and_syntax_error_are_crashes():
    verifier = PythonTestVerifier()
    assert verifier("assert f() == 1", "def f():\n    return 1 / 0").status == "crash"
    result = verifier("assert f() == 1", "def f(:")
    assert result.status == "crash" and "SyntaxError" in result.detail


def test_python_verifier_early_exit_does_not_pass():
    verifier = PythonTestVerifier()
    assert verifier("assert False", "import sys\nsys.exit(0)").status == "crash"
    assert verifier("assert False", "import os\nos._exit(0)").status == "crash"


def test_python_verifier_stops_at_the_first_failing_assert():
    program = "def f(n):\n    while n > 1:\n        pass\n    return n"
    start = time.monotonic()
    result = PythonTestVerifier(timeout_s=5)("assert f(1) == 2\nassert f(2) == 2", program)
    assert result == (0.0, "wrong", "assert f(1) == 2: got 1")  # f(2) never finishes
    assert time.monotonic() - start < 2.0


def test_python_verifier_times_out_infinite_loops():
    verifier = PythonTestVerifier(timeout_s=0.5)
    start = time.monotonic()
    result = verifier("assert True", "while True:\n    pass")
    assert result.status == "timeout"
    assert time.monotonic() - start < 3.0


def test_python_verifier_memory_limit():
    verifier = PythonTestVerifier(memory_mb=64)
    size = "def size():\n    return len(x)\n"
    result = verifier("assert size() > 0", f"x = [0] * (10**9)\n{size}")
    assert result.status == "memory" and result.reward == 0.0
    assert verifier("assert size() > 0", f"x = [0] * 1000\n{size}").status == "ok"


def test_python_verifier_test_source_precedence():
    code = "def f():\n    return 1"
    fixed = PythonTestVerifier(tests="assert f() == 1")
    assert fixed("ignored prompt", code).status == "ok"
    assert fixed("ignored prompt", code, tests="assert f() == 2").status == "wrong"


def test_python_verifier_never_raises_and_leaves_the_caller_alive():
    result = PythonTestVerifier()("assert True", "import os, signal\nos.killpg(0, signal.SIGKILL)")
    assert result.status == "crash"
    assert PythonTestVerifier(timeout_s=-1)("assert True", "pass").status in STATUSES
    assert os.getpid()  # still here


def test_split_tests_separates_calls_from_expected_values():
    assert split_tests("assert add(1, 2) == (3, 4)\nassert 5 in f(x=[1])\nassert not g()") == (
        AssertTest("assert add(1, 2) == (3, 4)", "add(1, 2)", "==", [3, 4], True),
        AssertTest("assert 5 in f(x=[1])", "f(x=[1])", "in", 5, False),
        AssertTest("assert not g()", "g()", "falsy", None, True),
    )
    assert split_tests("assert True") == (AssertTest("assert True", None, "truthy", True, True),)


@pytest.mark.parametrize(
    ("tests", "complaint"),
    [
        ("for i in range(3):\n    assert f(i) == i", "not an assert"),
        ("def check(f):\n    assert f() == 1\ncheck(f)", "not an assert"),
        ("assert f() == g()", "neither side is a literal"),
        ("assert f() == EXPECTED", "neither side is a literal"),
        ("assert f() == 10 ** 30", "neither side is a literal"),
        ("assert f() is None", "operator Is"),
        ("assert 0 < f() < 2", "chained comparison"),
        ("assert sorted(f()) == [1, 2]", "'sorted' is a builtin"),
        ("assert math.isclose(f(), 0.5)", "not a call of a plain name"),
        ("assert f() == {1, 2}", "neither side is a literal"),
        ("assert f() == b'x'", "neither side is a literal"),
        ("assert f() == {1: 'a'}", "neither side is a literal"),
        ("assert not f() == 1", "not a call of a plain name"),
        ("assert f(", "not valid Python"),
        ("# no tests", "no assert statement"),
    ],
)
def test_split_tests_refuses_what_it_cannot_judge_safely(tests, complaint):
    with pytest.raises(ValueError, match="accepted: ") as error:
        split_tests(tests)
    assert complaint in str(error.value)
    if tests.startswith("assert f("):
        assert repr(tests) in str(error.value)  # the statement, named


def test_python_verifier_refuses_unsplittable_tests_before_running_anything(monkeypatch):
    with pytest.raises(ValueError, match="'assert f\\(\\) is None'"):
        PythonTestVerifier(tests="assert f() is None")

    def no_run(*args, **kwargs):
        raise AssertionError("a program ran")

    monkeypatch.setattr(llm_bridge.verifiers, "run_in_sandbox", no_run)
    with pytest.raises(ValueError, match="is not supported"):
        PythonTestVerifier()("", "def f():\n    return None", tests="assert f() is None")
    reward = reward_function(PythonTestVerifier(), column_kwargs=("tests",), num_workers=2)
    with pytest.raises(ValueError, match="chained comparison"):
        reward(["p"], ["def f():\n    return 1"], tests=["assert 0 < f() < 2"])


@pytest.mark.parametrize(
    ("tests", "program", "status"),
    [
        ("assert 3 == add(1, 2)", "def add(a, b):\n    return a + b", "ok"),
        ("assert add(1, 2) != 4", "def add(a, b):\n    return a + b", "ok"),
        ("assert add(1, 2) != 3", "def add(a, b):\n    return a + b", "wrong"),
        ("assert 2 < add(1, 2)\nassert add(1, 2) <= 3", "def add(a, b):\n    return a + b", "ok"),
        (
            "assert 'b' in letters()\nassert 'z' not in letters()",
            "def letters():\n    return 'abc'",
            "ok",
        ),
        (
            "assert is_even(2)\nassert not is_even(3)",
            "def is_even(n):\n    return n % 2 == 0",
            "ok",
        ),
        ("assert pair() == (1, 2)", "def pair():\n    return (1, 2)", "ok"),
        ("assert pair() == (1, 2)", "def pair():\n    return [1, 2]", "ok"),
        ("assert pair() == [1, 2]", "def pair():\n    return (1, 2)", "ok"),
        ("assert table() == {'a': [1, (2,)]}", "def table():\n    return {'a': [1, [2]]}", "ok"),
        ("assert nothing() == None", "def nothing():\n    pass", "ok"),
        ("assert big() == 1000000000000000000000000000000", "def big():\n    return 10**30", "ok"),
        ("assert half() == 0.5", "def half():\n    return 1 / 2", "ok"),
        ("assert infinite() == 1e999", "def infinite():\n    return float('inf')", "ok"),
        ("assert nan() != 0.0", "def nan():\n    return float('nan')", "ok"),
        ("assert nan() == 1e999", "def nan():\n    return float('nan')", "wrong"),
        ("assert one() == 1", "def one():\n    return True", "ok"),  # as Python's ==
        ("assert one() < 2", "def one():\n    return [1]", "wrong"),  # TypeError: fails
        ("assert x == 3", "x = 3", "ok"),
        ("assert False", "x = 3", "wrong"),
    ],
)
def test_python_verifier_judges_each_assert_form_like_python(tests, program, status):
    assert PythonTestVerifier()("", program, tests=tests).status == status


@pytest.mark.parametrize(
    ("returned", "what"),
    [
        ("{1, 2}", "a builtins.set"),
        ("b'3'", "a builtins.bytes"),
        ("len", "a builtins.builtin_function_or_method"),
        ("{1: 3}", "a dict with a key that is not a str"),
        ("3 + 0j", "a builtins.complex"),
        ("__import__('fractions').Fraction(3)", "a fractions.Fraction"),
    ],
)
def test_python_verifier_values_that_are_not_plain_data_are_wrong(returned, what):
    result = PythonTestVerifier()("", f"def f():\n    return {returned}", tests="assert f() == 3")
    assert result.status == "wrong"
    assert result.detail.startswith(f"assert f() == 3: returned {what}, not plain data")


def test_reward_function_has_the_trl_signature_and_counts_statuses():
    reward = reward_function(CountdownVerifier())
    assert list(inspect.signature(reward).parameters) == ["prompts", "completions", "kwargs"]
    rewards = reward(
        prompts=[PROMPT, PROMPT, PROMPT],
        completions=["3/4=3|4,1-3|4=1|4,6/1|4=24", "6*4=24,3-1=2,24+2=26", "x"],
        answer=["a", "b", "c"],  # unknown dataset columns are ignored
    )
    assert rewards == [1.0, 0.0, 0.0]
    assert isinstance(reward.stats, VerifierStats)
    assert reward.stats.counts == {"ok": 1, "wrong": 1, "invalid": 1}
    assert reward.stats.total == 3
    assert reward.stats.last_detail["invalid"] == "malformed step 'x'"
    assert reward.stats.summary() == (
        "ok 1/3, wrong 1 (final 26 != 24), invalid 1 (malformed step 'x')"
    )
    assert reward.__name__ == "CountdownVerifier_reward"
    reward.stats.reset()
    assert reward.stats.total == 0


def test_reward_function_reads_chat_messages():
    reward = reward_function(CountdownVerifier())
    prompt = [{"role": "user", "content": PROMPT}]
    completion = [{"role": "assistant", "content": "3/4=3|4,1-3|4=1|4,6/1|4=24"}]
    assert reward([prompt], [completion]) == [1.0]


def test_reward_function_forwards_chosen_columns_in_parallel():
    reward = reward_function(PythonTestVerifier(), column_kwargs=("tests",), num_workers=2)
    rewards = reward(
        ["write f", "write f"],
        ["def f():\n    return 1", "def f():\n    return 2"],
        tests=["assert f() == 1", "assert f() == 1"],
    )
    assert rewards == [1.0, 0.0]
    with pytest.raises(ValueError, match="tests"):
        reward(["p"], ["c"])


def test_verifier_result_reward_matches_status():
    assert VerifierResult(1.0, "ok", "ok").reward == 1.0
