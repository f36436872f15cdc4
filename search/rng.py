"""Counter-based per-root random numbers for the numba kernels.

Each root carries its own 64-bit key. Every random vector is a pure function of
``(key, stream)``, so a root's noise never depends on its row in the batch or on
the batch size -- unlike mctx, which splits one key per batch row. The generator
is splitmix64 (Steele, Lea & Flood 2014): tiny, fast in numba, and good enough
for exploration noise.
"""

from __future__ import annotations

import numba
import numpy as np

# Streams: independent sequences drawn from one root key.
STREAM_DIRICHLET = np.uint64(0x9E3779B97F4A7C15)
STREAM_ACTION = np.uint64(0xD1B54A32D192ED03)
STREAM_GUMBEL = np.uint64(0x8CB92BA72F3D8DD7)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0


@numba.njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _MUL1
    z = (z ^ (z >> np.uint64(27))) * _MUL2
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def stream_state(key, stream):
    """Initial generator state for one root key and one stream."""
    return _mix(np.uint64(key) ^ stream)


@numba.njit(cache=True, inline="always")
def next_uniform(state):
    """Returns ``(new_state, u)`` with ``u`` uniform in the open interval (0, 1)."""
    state = state + _GOLDEN
    bits = _mix(state) >> np.uint64(11)
    return state, (np.float64(bits) + 0.5) * _TWO_POW_MINUS_53


@numba.njit(cache=True)
def next_normal(state):
    """Standard normal by Box-Muller (one of the pair; simplicity over speed)."""
    state, u1 = next_uniform(state)
    state, u2 = next_uniform(state)
    return state, np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@numba.njit(cache=True)
def next_gamma(state, alpha):
    """Gamma(alpha, 1) by Marsaglia & Tsang (2000), boosted for alpha < 1."""
    boost = 1.0
    if alpha < 1.0:
        state, u = next_uniform(state)
        boost = u ** (1.0 / alpha)
        alpha += 1.0
    d = alpha - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        state, x = next_normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        state, u = next_uniform(state)
        if np.log(u) < 0.5 * x * x + d - d * v + d * np.log(v):
            return state, d * v * boost


@numba.njit(cache=True)
def fill_dirichlet(key, alpha, include, out):
    """Writes Dirichlet(alpha) over the entries where ``include`` into ``out`` (0 elsewhere)."""
    state = stream_state(key, STREAM_DIRICHLET)
    total = 0.0
    for a in range(out.shape[0]):
        if include[a]:
            state, g = next_gamma(state, alpha)
            out[a] = g
            total += g
        else:
            out[a] = 0.0
    if total <= 0.0:  # every gamma underflowed (tiny alpha): fall back to uniform
        count = 0
        for a in range(out.shape[0]):
            count += include[a]
        for a in range(out.shape[0]):
            out[a] = 1.0 / count if include[a] else 0.0
        return
    for a in range(out.shape[0]):
        out[a] /= total


@numba.njit(cache=True)
def fill_gumbel(key, stream, scale, out):
    """Writes ``scale * Gumbel(0, 1)`` samples into ``out``."""
    state = stream_state(key, stream)
    for a in range(out.shape[0]):
        state, u = next_uniform(state)
        out[a] = scale * -np.log(-np.log(u))


def root_keys(seed: int | np.ndarray, batch_size: int) -> np.ndarray:
    """Per-root 64-bit keys, ``[B] uint64``.

    An array is taken as the caller's own per-root keys (e.g. a game id mixed with the move
    number), which makes every root's noise independent of the batch layout. A plain int seeds
    the rows ``0..B-1``, and a ``np.random.Generator`` draws B keys: reproducible, but a root's
    noise then follows its row.
    """
    if isinstance(seed, np.random.Generator):
        return seed.integers(
            0, np.iinfo(np.uint64).max, size=batch_size, dtype=np.uint64, endpoint=True
        )
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return _row_keys(np.uint64((int(seed) * int(_GOLDEN)) & 0xFFFFFFFFFFFFFFFF), batch_size)
    keys = np.asarray(seed)
    if keys.shape != (batch_size,) or not np.issubdtype(keys.dtype, np.integer):
        raise ValueError(
            f"seed must be an int, a numpy Generator or an integer array of shape ({batch_size},) "
            "(one key per root); "
            f"got {type(seed).__name__} with shape {getattr(keys, 'shape', None)} and dtype "
            f"{getattr(keys, 'dtype', None)}"
        )
    return keys.astype(np.uint64)


@numba.njit(cache=True)
def _row_keys(base, batch_size):
    keys = np.empty(batch_size, np.uint64)
    for row in range(batch_size):
        keys[row] = _mix(base + np.uint64(row))
    return keys


@numba.njit(cache=True)
def batch_dirichlet(keys, alpha, include, out):
    """``out[b]`` = Dirichlet(alpha) over ``include[b]`` drawn from root key ``keys[b]``."""
    for b in range(keys.shape[0]):
        fill_dirichlet(keys[b], alpha, include[b], out[b])


@numba.njit(cache=True)
def batch_gumbel(keys, stream, scale, out):
    """``out[b]`` = ``scale * Gumbel(0, 1)`` drawn from root key ``keys[b]``."""
    for b in range(keys.shape[0]):
        fill_gumbel(keys[b], stream, scale, out[b])
