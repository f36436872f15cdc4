"""Input checks with errors that name the bad value and what would be accepted."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def torch_module():
    """The torch module if the caller has imported it, else None. The search never imports
    torch itself (DESIGN.md: `search` depends on numpy and numba only); a tensor can only reach
    it from a caller that has."""
    return sys.modules.get("torch")


def is_tensor(x: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


def to_numpy(x: Any) -> np.ndarray:
    if is_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def float_array(
    x: Any, name: str, shape: tuple[int, ...], *, check_finite: bool = True
) -> np.ndarray:
    """``x`` as a writeable C-contiguous float32 array of ``shape``, or a clear error."""
    if (
        type(x) is np.ndarray
        and x.dtype == np.float32
        and x.shape == shape
        and x.flags.c_contiguous
        and x.flags.writeable
        and not check_finite
    ):
        return x  # the common case inside the search loop: nothing to convert
    array = to_numpy(x)
    if not np.issubdtype(array.dtype, np.floating):
        raise TypeError(
            f"{name} must be a floating-point array of shape {shape}; got dtype {array.dtype}"
        )
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {array.shape}")
    array = np.ascontiguousarray(array, dtype=np.float32)
    if not array.flags.writeable:  # the kernels' compiled signatures take writeable arrays
        array = array.copy()
    if check_finite and not np.isfinite(array).all():
        rows = np.unique(np.nonzero(~np.isfinite(array))[0]).tolist()
        raise ValueError(
            f"{name} has NaN or infinite entries (rows {rows[:10]}); finite values are required"
        )
    return array


def legal_mask_array(
    x: Any, name: str, shape: tuple[int, int], *, check_rows: bool = True
) -> np.ndarray:
    """A ``[B, A]`` bool mask (True = legal) with at least one legal action per row (unless
    ``check_rows=False``: the caller's kernel checks)."""
    mask = x if type(x) is np.ndarray else to_numpy(x)
    if mask.dtype != np.bool_:
        raise TypeError(
            f"{name} must be a bool array (True = legal) of shape {shape}; got dtype {mask.dtype}"
        )
    if mask.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {mask.shape}")
    if check_rows:
        empty_rows = np.nonzero(~mask.any(axis=1))[0]
        if empty_rows.size:
            raise ValueError(
                f"{name}: rows {empty_rows[:10].tolist()} have no legal action; every node needs one"
            )
    mask = np.ascontiguousarray(mask)
    return mask if mask.flags.writeable else mask.copy()


def positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number; got {type(value).__name__} {value!r}")
    return float(value)


def in_range(value: float, name: str, low: float, high: float) -> float:
    if not (low <= _number(value, name) <= high):
        raise ValueError(f"{name} must be in [{low}, {high}]; got {value!r}")
    return float(value)


def positive_float(value: float, name: str) -> float:
    number = _number(value, name)
    if not (np.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")
    return number


def non_negative_float(value: float, name: str) -> float:
    number = _number(value, name)
    if not (np.isfinite(number) and number >= 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    return number
