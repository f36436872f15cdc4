"""Verifiers: Countdown steps, arithmetic expressions, Python tests in a subprocess, rewards."""

import inspect
import os
import time

import pytest

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


def test_python_verifier_failed_assertion_is_wrong():
    result = PythonTestVerifier()("assert add(2, 3) == 5", "def add(a, b):\n    return a - b")
    assert result.status == "wrong" and result.reward == 0.0
    assert "AssertionError" in result.detail


def test_python_verifier_exception_and_syntax_error_are_crashes():
    verifier = PythonTestVerifier()
    assert verifier("assert f() == 1", "def f():\n    return 1 / 0").status == "crash"
    result = verifier("assert f() == 1", "def f(:")
    assert result.status == "crash" and "SyntaxError" in result.detail


def test_python_verifier_early_exit_does_not_pass():
    verifier = PythonTestVerifier()
    assert verifier("assert False", "import sys\nsys.exit(0)").status == "crash"
    assert verifier("assert False", "import os\nos._exit(0)").status == "crash"


def test_python_verifier_times_out_infinite_loops():
    verifier = PythonTestVerifier(timeout_s=0.5)
    start = time.monotonic()
    result = verifier("assert True", "while True:\n    pass")
    assert result.status == "timeout"
    assert time.monotonic() - start < 3.0


def test_python_verifier_kills_what_the_program_started(tmp_path):
    marker = tmp_path / "child_alive"
    # The child outlives the program's own exit; its process group is killed afterwards.
    child = f"import pathlib, time; time.sleep(1.0); pathlib.Path({str(marker)!r}).touch()"
    program = f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {child!r}])\n"
    assert PythonTestVerifier()("assert True", program).status == "ok"
    time.sleep(1.5)
    assert not marker.exists()


def test_python_verifier_memory_limit():
    verifier = PythonTestVerifier(memory_mb=64)
    result = verifier("assert len(x) > 0", "x = [0] * (10**9)")
    assert result.status == "memory" and result.reward == 0.0
    assert verifier("assert len(x) > 0", "x = [0] * 1000").status == "ok"


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
