"""A Ctrl-C that lands in a finalizer is retried after it, never swallowed."""

import gc
import os
import signal
import sys
import time

import pytest

from mbrl.cli._interrupt import interrupts_never_lost


@pytest.fixture
def python_sigint_handler():
    # A shell's background job (`make test &`) starts with SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class CtrlCWhileCollected:
    """What llvmlite's finalizers meet when Ctrl-C comes during numba's compile."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, inside the finalizer
            pass


def ctrl_c_while_closing():
    """The same in another kind of finalizer: a generator closed when it is collected."""
    try:
        yield
    finally:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass


def collect_then_wait(seconds: float, finalizer: str = "__del__") -> None:
    if finalizer == "__del__":
        CtrlCWhileCollected()
    else:
        next(ctrl_c_while_closing())  # started, then dropped: closed by its finalizer
    gc.collect()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.fixture
def ignored(monkeypatch):
    """The exceptions Python reports as ignored ("Exception ignored in ... __del__")."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: seen.append(report.exc_type))
    return seen


FINALIZERS = ["__del__", "generator"]


@pytest.mark.parametrize("finalizer", FINALIZERS)
def test_python_alone_swallows_it(python_sigint_handler, ignored, finalizer):
    collect_then_wait(0.5, finalizer)  # no KeyboardInterrupt: the bug this module exists for
    assert ignored == [KeyboardInterrupt]


@pytest.mark.parametrize("finalizer", FINALIZERS)
def test_it_is_raised_again_once_the_finalizer_has_returned(
    python_sigint_handler, ignored, finalizer
):
    with interrupts_never_lost(), pytest.raises(KeyboardInterrupt):
        collect_then_wait(5.0, finalizer)
    assert ignored == []


def test_other_ignored_exceptions_still_reach_the_hook_before(ignored):
    class FailsWhenCollected:
        def __del__(self):
            raise RuntimeError("a finalizer's own error")

    with interrupts_never_lost():
        FailsWhenCollected()
    assert ignored == [RuntimeError]
