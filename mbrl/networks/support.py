"""Scalars as categorical distributions over an integer support (MuZero, Appendix F).

A scalar ``x`` (value, reward, value prefix) is squashed by the invertible transform
``h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x`` and then written as a two-hot distribution over the
integers ``-S .. S``: the two neighbouring atoms share the mass so that the expectation is exact.
Heads predict logits over the ``2S + 1`` atoms; the scalar is ``h^-1(E[atom])``. The inverse is
closed-form (the positive root of the quadratic in ``sqrt(|x| + 1)``).
"""

from __future__ import annotations

import torch

EPS = 1e-3


def scalar_transform(x: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """``h(x)``: compresses large returns so one support covers rewards from 1 to 10^4."""
    return torch.sign(x) * (torch.sqrt(x.abs() + 1) - 1) + eps * x


def inverse_scalar_transform(y: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """``h^-1(y)``, exact: solves ``eps t^2 + t - (|y| + 1 + eps) = 0`` for ``t = sqrt(|x|+1)``."""
    t = (torch.sqrt(1 + 4 * eps * (y.abs() + 1 + eps)) - 1) / (2 * eps)
    return torch.sign(y) * (t.square() - 1)


class ScalarSupport:
    """Converts between scalars ``[...]`` and distributions ``[..., 2S + 1]`` over ``-S .. S``."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"support size must be >= 1 (atoms -S..S), got {size}")
        self.size = int(size)

    @property
    def num_atoms(self) -> int:
        return 2 * self.size + 1

    def atoms(self, like: torch.Tensor) -> torch.Tensor:
        return torch.arange(-self.size, self.size + 1, device=like.device, dtype=torch.float32)

    def to_distribution(self, x: torch.Tensor) -> torch.Tensor:
        """Two-hot target of ``h(x)``, clipped to the support's range: ``[...] -> [..., 2S+1]``."""
        y = scalar_transform(x.float()).clamp(-self.size, self.size)
        low = y.floor()
        upper_weight = y - low
        index = (low + self.size).long()
        out = torch.zeros(*x.shape, self.num_atoms, device=x.device)
        out.scatter_(-1, index.unsqueeze(-1), (1 - upper_weight).unsqueeze(-1))
        upper = (index + 1).clamp(max=self.num_atoms - 1)
        # At y == S the upper weight is 0, so clamping the index adds nothing.
        out.scatter_add_(-1, upper.unsqueeze(-1), upper_weight.unsqueeze(-1))
        return out

    def to_scalar(self, logits: torch.Tensor) -> torch.Tensor:
        """Expected atom under ``softmax(logits)``, mapped back by ``h^-1``: ``[..., 2S+1] -> [...]``."""
        probs = torch.softmax(logits.float(), dim=-1)
        return inverse_scalar_transform((probs * self.atoms(logits)).sum(-1))
