"""Thread defaults for torch (the network) and numba (the search kernels) in one process.

Measured with ``python -m benchmarks.contention`` on 2 cores (figures in docs/results.md,
"Thread defaults"): training ran about as fast with numba's pool at one thread as at two on an
idle machine, but with one core busy (another training run, a compile) a two-thread pool made
it several times slower, far more than in proportion, while a one-thread pool lost little. A
numba parallel region (the search kernels use ``prange`` from 512 root-simulations) involves the
whole pool: when the neighbour holds the second core, every search waits for a thread the
scheduler has not run. ``numba.set_num_threads(1)`` on a two-thread pool did not help; the pool
itself must be one thread, and its size is fixed when its threads start (at the first parallel
region), so `configure_threads` sizes the pool when it still can. torch's threads showed no such
collapse and keep torch's default (one per core).
"""

from __future__ import annotations

import os

import numba
import torch
from numba.np.ufunc import parallel

DEFAULT_NUMBA_THREADS = 1


def configure_threads(
    *, torch_threads: int = 0, numba_threads: int = DEFAULT_NUMBA_THREADS
) -> dict:
    """Set torch's intra-op threads and numba's for the search; 0 keeps the library's default
    (torch: one per core; numba: ``NUMBA_NUM_THREADS``, else all cores). Numba's pool is sized
    to ``numba_threads`` if it has not started yet; once started (an earlier parallel region in
    this process) its size is fixed, and regions use at most ``numba_threads`` of it. Returns
    the counts in effect."""
    if torch_threads < 0 or numba_threads < 0:
        raise ValueError(
            "trainer.torch_threads and trainer.numba_threads must be >= 0 (0 = the library's "
            f"default), got {torch_threads} and {numba_threads}"
        )
    if torch_threads:
        torch.set_num_threads(torch_threads)
    if numba_threads and not parallel._is_initialized:
        # Through the environment, since numba's compiler re-reads it (config.reload_config).
        os.environ["NUMBA_NUM_THREADS"] = str(numba_threads)
        numba.config.reload_config()
        parallel.NUM_THREADS = numba_threads  # what the pool is launched with
    if numba_threads:
        numba.set_num_threads(min(numba_threads, numba.config.NUMBA_NUM_THREADS))
    return {"torch": torch.get_num_threads(), "numba": numba.get_num_threads()}
