"""SIGTERM and SIGINT end a training run at the next step, after writing ``last.ckpt``.

A scheduler pre-empts a job with SIGTERM (Slurm, Kubernetes, ``timeout``) and a person with
Ctrl-C; either way the work so far must survive. The handler only asks the trainer to stop: the
step in progress and its self-play finish (a few seconds at most), then ``train`` writes
``last.ckpt`` as at any normal end and reports the signal. An evaluation in progress is abandoned
(`abortable`), since one can take minutes and holds nothing that must be saved. A second Ctrl-C
quits at once, without a checkpoint.

Lightning installs its own SIGTERM handler when ``fit`` starts, which raises once the step ends
and skips the checkpoint; ours replaces it from ``on_train_start`` until the run ends.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator

import lightning as L

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class EvaluationAborted(Exception):
    """Raised inside an evaluation when a stop signal arrives."""


class GracefulStop(L.Callback):
    """``received``: the signal number that asked the run to stop, or None."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._trainer = None
        self._previous: dict[int, object] = {}
        self._evaluating = False

    @property
    def signal_name(self) -> str | None:
        return None if self.received is None else signal.Signals(self.received).name

    def on_train_start(self, trainer, pl_module) -> None:
        self._trainer = trainer
        for number in SIGNALS:
            self._previous[number] = signal.signal(number, self._handle)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.received is not None:
            trainer.should_stop = True

    def on_train_end(self, trainer, pl_module) -> None:
        self._restore()

    def on_exception(self, trainer, pl_module, exception) -> None:
        self._restore()

    def _restore(self) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}

    def _handle(self, number: int, frame) -> None:
        if self.received is not None and number == signal.SIGINT:
            raise KeyboardInterrupt  # the second Ctrl-C: quit now, without a checkpoint
        first = self.received is None
        self.received = number
        # Several learner processes (DDP) must stop after the same step: there the request
        # waits for `on_train_batch_end`, which comes before their common decision.
        if self._trainer is not None and self._trainer.world_size == 1:
            self._trainer.should_stop = True
        if first:
            print(
                f"received {signal.Signals(number).name}: stopping after this step to write "
                "last.ckpt (Ctrl-C again quits without it)",
                file=sys.stderr,
                flush=True,
            )
        if self._evaluating:
            self._evaluating = False
            raise EvaluationAborted

    @contextlib.contextmanager
    def abortable(self) -> Iterator[None]:
        """A block (an evaluation) that a stop signal interrupts with `EvaluationAborted`."""
        self._evaluating = True
        try:
            yield
        finally:
            self._evaluating = False
