"""Ctrl-C that is never lost, even when it lands in a finalizer.

Python turns SIGINT into a KeyboardInterrupt raised in whatever Python code runs next. When that
code is a ``__del__`` (llvmlite runs many while numba compiles the search on a cold cache),
Python prints the exception as ignored and goes on: ``mbrl-play`` then played its move and
waited at the prompt as if nothing had happened. `interrupts_never_lost` installs a handler that
raises as usual, except inside a finalizer: there it asks for the signal again a moment later,
when the finalizer has returned.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

RETRY_AFTER_S = 0.05


@contextlib.contextmanager
def interrupts_never_lost() -> Iterator[None]:
    """Within: SIGINT raises KeyboardInterrupt outside finalizers, and is retried from inside
    one. A process that ignores SIGINT (a shell's background job) or that already has its own
    handler keeps it."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    signal.signal(signal.SIGINT, _raise_outside_finalizers)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _raise_outside_finalizers(signum: int, frame) -> None:
    if _in_finalizer(frame):
        retry = threading.Timer(RETRY_AFTER_S, os.kill, (os.getpid(), signum))
        retry.daemon = True
        retry.start()
        return
    raise KeyboardInterrupt


def _in_finalizer(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False
