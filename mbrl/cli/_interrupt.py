"""Ctrl-C that is never lost, even when it lands in a finalizer.

Python turns SIGINT into a KeyboardInterrupt raised in whatever Python code runs next. When that
code is a finalizer (a ``__del__``, a generator being closed, a weakref callback: llvmlite runs
many while numba compiles the search on a cold cache), Python reports the exception as
"ignored" through ``sys.unraisablehook`` and goes on: ``mbrl-play`` then played its move and
waited at the prompt as if nothing had happened. `interrupts_never_lost` installs a hook that
takes such a KeyboardInterrupt and sends SIGINT again a moment later, when the finalizer has
returned (again, if that lands in another finalizer).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

RETRY_AFTER_S = 0.05


@contextlib.contextmanager
def interrupts_never_lost() -> Iterator[None]:
    """Within: a KeyboardInterrupt that a finalizer swallowed is raised again outside it. Other
    unraisable exceptions go to the hook that was there before."""
    previous = sys.unraisablehook

    def hook(report) -> None:
        if report.exc_type is KeyboardInterrupt:
            retry = threading.Timer(RETRY_AFTER_S, os.kill, (os.getpid(), signal.SIGINT))
            retry.daemon = True
            retry.start()
        else:
            previous(report)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
