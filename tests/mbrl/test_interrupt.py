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


def collect_then_wait(seconds: float) -> None:
    CtrlCWhileCollected()
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


def test_python_alone_swallows_it(python_sigint_handler, ignored):
    collect_then_wait(0.5)  # no KeyboardInterrupt: the bug this module exists for
    assert ignored == [KeyboardInterrupt]


def test_the_handler_delivers_it_once_the_finalizer_has_returned(python_sigint_handler, ignored):
    with interrupts_never_lost(), pytest.raises(KeyboardInterrupt):
        collect_then_wait(5.0)
    assert ignored == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_never_lost():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
