"""A ring buffer of training positions with uniform or prioritized sampling.

Fields are declared up front (name -> per-position shape and dtype) and stored in preallocated
numpy arrays, so memory is known at start-up and sampling is one fancy-index per field. The whole
buffer round-trips through ``state_dict`` (torch tensors, so checkpoints load with
``weights_only=True``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch


class Sample(NamedTuple):
    indices: np.ndarray  # [S] int64 positions in the buffer
    fields: dict[str, np.ndarray]  # name -> [S, *shape]
    weights: np.ndarray  # [S] float32 importance weights (ones when uniform)


class ReplayBuffer:
    def __init__(
        self,
        capacity: int,
        fields: dict[str, tuple[tuple[int, ...], np.dtype]],
        *,
        prioritized: bool = False,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-3,
    ):
        if capacity < 1:
            raise ValueError(f"replay capacity must be >= 1, got {capacity}")
        if not 0.0 <= alpha <= 1.0 or not 0.0 <= beta <= 1.0:
            raise ValueError(f"priority alpha and beta must lie in [0, 1], got {alpha}, {beta}")
        self.capacity = int(capacity)
        self.prioritized, self.alpha, self.beta, self.eps = prioritized, alpha, beta, eps
        nbytes = sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d in fields.values())
        try:
            self.data = {
                name: np.zeros((capacity, *shape), dtype) for name, (shape, dtype) in fields.items()
            }
        except MemoryError as error:
            raise MemoryError(
                f"replay of {capacity} positions needs {capacity * nbytes / 2**30:.1f} GiB; "
                f"lower replay.capacity"
            ) from error
        self.priorities = np.zeros(capacity, np.float64)
        self.size = 0
        self.cursor = 0  # next slot to write
        self.total_added = 0

    def __len__(self) -> int:
        return self.size

    def add(self, positions: dict[str, np.ndarray]) -> None:
        """Append positions (each field ``[P, *shape]``), overwriting the oldest when full."""
        count = len(next(iter(positions.values())))
        if set(positions) != set(self.data):
            raise ValueError(f"replay fields are {sorted(self.data)}, got {sorted(positions)}")
        if count == 0:
            return
        slots = (self.cursor + np.arange(count)) % self.capacity
        for name, values in positions.items():
            self.data[name][slots] = values
        self.priorities[slots] = self.priorities[: self.size].max(initial=1.0)
        self.cursor = int((self.cursor + count) % self.capacity)
        self.size = min(self.size + count, self.capacity)
        self.total_added += count

    def sample(self, batch_size: int, rng: np.random.Generator) -> Sample:
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        if self.prioritized:
            scaled = self.priorities[: self.size] ** self.alpha
            probs = scaled / scaled.sum()
            indices = rng.choice(self.size, size=batch_size, p=probs)
            weights = (self.size * probs[indices]) ** -self.beta
            weights = (weights / weights.max()).astype(np.float32)
        else:
            indices = rng.integers(0, self.size, size=batch_size)
            weights = np.ones(batch_size, np.float32)
        return Sample(indices, {k: v[indices] for k, v in self.data.items()}, weights)

    def update_priorities(self, indices: np.ndarray, errors: np.ndarray) -> None:
        self.priorities[indices] = np.abs(errors) + self.eps

    def state_dict(self) -> dict:
        return {
            "data": {k: torch.from_numpy(v[: self.size].copy()) for k, v in self.data.items()},
            "priorities": torch.from_numpy(self.priorities[: self.size].copy()),
            "capacity": self.capacity,
            "size": self.size,
            "cursor": self.cursor,
            "total_added": self.total_added,
        }

    def load_state_dict(self, state: dict) -> None:
        size = int(state["size"])
        capacity = int(state.get("capacity", size))
        if capacity != self.capacity or set(state["data"]) != set(self.data):
            raise ValueError(
                f"replay checkpoint has capacity {capacity} for {sorted(state['data'])}; this "
                f"buffer has capacity {self.capacity} for {sorted(self.data)}"
            )
        for name, values in state["data"].items():
            self.data[name][:size] = values.numpy()
        self.priorities[:size] = state["priorities"].numpy()
        self.size, self.cursor = size, int(state["cursor"])
        self.total_added = int(state["total_added"])
