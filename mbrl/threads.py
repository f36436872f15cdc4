"""Thread defaults for torch (the network) and numba (the search kernels) in one process.

Measured with ``python -m benchmarks.contention`` on 2 cores (figures in docs/results.md,
"Thread defaults"): training with two numba threads ran about as fast as with one on an idle
machine, but with one core busy (another training run, a compile) it slowed far more than in
proportion, while one numba thread kept most of its speed. A numba parallel region (the
search kernels use ``prange`` from 512 root-simulations) ends at a barrier: when the neighbour
holds the second core, every search waits for a thread the scheduler has not run yet. torch's
threads showed no such collapse. So a training process runs the search on one numba thread by
default and leaves torch at its own default (one thread per core).
"""

from __future__ import annotations

import numba
import torch

DEFAULT_NUMBA_THREADS = 1


def configure_threads(
    *, torch_threads: int = 0, numba_threads: int = DEFAULT_NUMBA_THREADS
) -> dict:
    """Set this thread's torch and numba thread counts; 0 keeps the library's default (torch:
    one per core; numba: ``NUMBA_NUM_THREADS``, all cores unless set). Returns the counts in
    effect. A count above numba's pool (``NUMBA_NUM_THREADS``) is refused, naming the key."""
    if torch_threads < 0 or numba_threads < 0:
        raise ValueError(
            "trainer.torch_threads and trainer.numba_threads must be >= 0 (0 = the library's "
            f"default), got {torch_threads} and {numba_threads}"
        )
    if numba_threads > numba.config.NUMBA_NUM_THREADS:
        raise ValueError(
            f"trainer.numba_threads={numba_threads} exceeds numba's pool of "
            f"{numba.config.NUMBA_NUM_THREADS} (NUMBA_NUM_THREADS)"
        )
    if torch_threads:
        torch.set_num_threads(torch_threads)
    numba.set_num_threads(numba_threads or numba.config.NUMBA_NUM_THREADS)
    return {"torch": torch.get_num_threads(), "numba": numba.get_num_threads()}
