"""Thread defaults: numba's pool of one thread for the search, torch's own default."""

import subprocess
import sys

import numba
import pytest
import torch

from mbrl.threads import configure_threads


@pytest.fixture(autouse=True)
def restore_threads():
    before = torch.get_num_threads(), numba.get_num_threads()
    yield
    torch.set_num_threads(before[0])
    numba.set_num_threads(before[1])


def test_a_fresh_process_starts_numba_with_a_pool_of_one_thread():
    # The pool's size is what matters (a two-thread pool told to use one still stalls under
    # contention), and it is fixed when the first parallel region starts its threads.
    probe = (
        "import numba, numpy as np\n"
        "from numba.np.ufunc import parallel\n"
        "from mbrl.threads import configure_threads\n"
        "configure_threads()\n"
        "@numba.njit(parallel=True)\n"
        "def total(x):\n"
        "    s = 0.0\n"
        "    for i in numba.prange(x.size):\n"
        "        s += x[i]\n"
        "    return s\n"
        "total(np.ones(4096))\n"
        "print(parallel._is_initialized, parallel.NUM_THREADS, numba.get_num_threads())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", "1", "1"]


def test_once_the_pool_runs_regions_use_at_most_the_count_asked_for():
    counts = configure_threads(torch_threads=1)
    assert (
        counts
        == {"torch": 1, "numba": 1}
        == {
            "torch": torch.get_num_threads(),
            "numba": numba.get_num_threads(),
        }
    )


def test_negative_counts_are_refused_naming_the_keys():
    with pytest.raises(ValueError, match=r"trainer\.torch_threads and trainer\.numba_threads"):
        configure_threads(torch_threads=-1)
