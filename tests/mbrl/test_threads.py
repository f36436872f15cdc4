"""Thread defaults: one numba thread for the search, torch's own default, both settable."""

import numba
import pytest
import torch

from mbrl.threads import DEFAULT_NUMBA_THREADS, configure_threads


@pytest.fixture(autouse=True)
def restore_threads():
    before = torch.get_num_threads(), numba.get_num_threads()
    yield
    torch.set_num_threads(before[0])
    numba.set_num_threads(before[1])


def test_the_default_runs_the_search_on_one_numba_thread():
    counts = configure_threads()
    assert counts["numba"] == DEFAULT_NUMBA_THREADS == numba.get_num_threads() == 1


def test_explicit_counts_reach_both_libraries():
    counts = configure_threads(torch_threads=1, numba_threads=0)
    assert counts == {"torch": 1, "numba": numba.config.NUMBA_NUM_THREADS}


def test_impossible_counts_are_refused_naming_the_keys():
    with pytest.raises(ValueError, match=r"trainer\.torch_threads and trainer\.numba_threads"):
        configure_threads(torch_threads=-1)
    with pytest.raises(ValueError, match=r"trainer.numba_threads=\d+ exceeds numba's pool"):
        configure_threads(numba_threads=numba.config.NUMBA_NUM_THREADS + 1)
