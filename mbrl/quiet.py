"""Third-party output a user cannot act on, filtered where it is known and harmless.

Lightning advertises its cloud products at every start ("💡 Tip: ..."), reports TPUs, HPUs and
GPUs that the machine does not have, and warns about our data stream's length and logging
interval, which are deliberate (`mbrl.selfplay.embedded`); torch deprecates a pytree API that
Lightning still calls. None of it tells the user anything to do, so `quiet_third_party` drops
exactly those messages (pytest's configuration filters the same warnings) and leaves the rest.
"""

from __future__ import annotations

import logging
import warnings

KNOWN_WARNINGS = (
    r".*isinstance\(treespec, LeafSpec\).*",  # torch 2.13 deprecates what Lightning 2.6 calls
    r"The number of training batches .* is smaller than the logging interval",
    # The batch stream reports a length only to stop Lightning's prefetch (BatchStream).
    r"Your `IterableDataset` has `__len__` defined",
)
# "GPU available: False, used: False" too: a machine without a GPU has nothing to change, and
# the line came before the one-line message of an error raised after the Trainer was built.
# A GPU left unused ("GPU available: True (cuda), used: False") is still reported.
DROPPED_LOG_LINES = (
    "💡 Tip:",
    "TPU available: False",
    "HPU available: False",
    "GPU available: False, used: False",
)


class _DropKnownLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(message.startswith(prefix) for prefix in DROPPED_LOG_LINES)


_FILTER = _DropKnownLines()


def quiet_third_party() -> None:
    """Filter the known messages (idempotent); call before a ``Trainer`` is built."""
    for pattern in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
