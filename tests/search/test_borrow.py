"""`search.borrow`: views without reference counting still read and write the caller's arrays."""

from typing import NamedTuple

import numba
import numpy as np
import pytest

from search.borrow import borrow


class Pair(NamedTuple):
    counts: np.ndarray
    scale: float


@numba.njit
def _fill_through_borrowed(array, value):
    view = borrow(array)
    for i in range(view.shape[0]):
        view[i] = value
    return view.sum()


@numba.njit
def _scaled_sum(pair):
    borrowed = borrow(pair)
    return borrowed.counts.sum() * borrowed.scale


@numba.njit
def _borrow_a_string(text):
    return borrow(text)


def test_writes_through_a_borrowed_view_reach_the_callers_array():
    array = np.zeros(5)
    assert _fill_through_borrowed(array, 2.0) == 10.0
    np.testing.assert_array_equal(array, np.full(5, 2.0))


def test_a_borrowed_record_keeps_its_fields():
    assert _scaled_sum(Pair(np.arange(4), 0.5)) == 3.0


def test_only_arrays_scalars_and_tuples_of_them_can_be_borrowed():
    with pytest.raises(numba.core.errors.TypingError):
        _borrow_a_string("text")
