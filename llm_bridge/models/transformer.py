"""A small causal transformer with a value head (nanoGPT-shaped, pre-norm).

``forward(ids [B, T]) -> LMHeads(logits [B, T, V], value_logit [B, T])``: the logits at position
``t`` predict token ``t + 1``; the value logit at ``t`` estimates (through a sigmoid) the
probability that the completion continuing from ``ids[:t + 1]`` will verify. Sequences are
right-padded, so causal attention never lets padding reach a real position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TinyLMSettings:
    vocab_size: int
    context: int = 64  # positions
    layers: int = 4
    heads: int = 4
    width: int = 128  # embedding size
    dropout: float = 0.0

    def __post_init__(self):
        if self.width % self.heads:
            raise ValueError(f"model width {self.width} must be divisible by heads {self.heads}")
        for name in ("vocab_size", "context", "layers", "heads", "width"):
            if getattr(self, name) < 1:
                raise ValueError(f"TinyLM {name} must be >= 1, got {getattr(self, name)}")


class LMHeads(NamedTuple):
    logits: torch.Tensor  # [B, T, V]
    value_logit: torch.Tensor  # [B, T]


class _Block(nn.Module):
    def __init__(self, s: TinyLMSettings):
        super().__init__()
        self.heads = s.heads
        self.norm1 = nn.LayerNorm(s.width)
        self.qkv = nn.Linear(s.width, 3 * s.width)
        self.proj = nn.Linear(s.width, s.width)
        self.norm2 = nn.LayerNorm(s.width)
        self.mlp = nn.Sequential(
            nn.Linear(s.width, 4 * s.width), nn.GELU(), nn.Linear(4 * s.width, s.width)
        )
        self.dropout = s.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, C)
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, settings: TinyLMSettings):
        super().__init__()
        self.settings = settings
        self.token_embedding = nn.Embedding(settings.vocab_size, settings.width)
        self.position_embedding = nn.Embedding(settings.context, settings.width)
        self.blocks = nn.ModuleList(_Block(settings) for _ in range(settings.layers))
        self.norm = nn.LayerNorm(settings.width)
        self.lm_head = nn.Linear(settings.width, settings.vocab_size, bias=False)
        self.value_head = nn.Linear(settings.width, 1)
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, ids: torch.Tensor) -> LMHeads:
        _, t = ids.shape
        if t > self.settings.context:
            raise ValueError(f"sequence of {t} tokens exceeds the context {self.settings.context}")
        positions = torch.arange(t, device=ids.device)
        x = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return LMHeads(self.lm_head(x), self.value_head(x).squeeze(-1))
