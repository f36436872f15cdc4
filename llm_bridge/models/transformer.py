"""A small causal transformer with a value head (nanoGPT-shaped, pre-norm; its blocks are the
core's `mbrl.networks.transformer_block`, which the chess network shares).

``forward(ids [B, T]) -> LMHeads(logits [B, T, V], value_logit [B, T])``: the logits at position
``t`` predict token ``t + 1``; the value logit at ``t`` estimates (through a sigmoid) the
probability that the completion continuing from ``ids[:t + 1]`` will verify. Sequences are
right-padded, so causal attention never lets padding reach a real position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from mbrl.networks.transformer_block import TransformerBlock, init_weights


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


class TinyLM(nn.Module):
    def __init__(self, settings: TinyLMSettings):
        super().__init__()
        self.settings = settings
        self.token_embedding = nn.Embedding(settings.vocab_size, settings.width)
        self.position_embedding = nn.Embedding(settings.context, settings.width)
        self.blocks = nn.ModuleList(
            TransformerBlock(settings.width, settings.heads, settings.dropout)
            for _ in range(settings.layers)
        )
        self.norm = nn.LayerNorm(settings.width)
        self.lm_head = nn.Linear(settings.width, settings.vocab_size, bias=False)
        self.value_head = nn.Linear(settings.width, 1)
        self.apply(init_weights)

    def forward(self, ids: torch.Tensor) -> LMHeads:
        x = self.features(ids)
        return LMHeads(self.lm_head(x), self.value_head(x).squeeze(-1))

    def forward_cached(
        self, ids: torch.Tensor, positions: torch.Tensor, past, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """New tokens ``ids [B, N]`` at ``positions [B, N]`` after cached keys and values
        ``past [L, 2, B, H, P, D]`` (None: no past), as in eval mode whatever the module's (no
        dropout); ``mask [B, N, P + N]`` as `llm_bridge.kv_cache.attention_mask` builds it.
        Returns the logits ``[B, V]`` and value logit ``[B]`` at the last column, and the new
        tokens' keys and values ``[L, 2, B, H, N, D]``."""
        last_position = int(positions.max())
        if last_position >= self.settings.context:
            raise ValueError(
                f"position {last_position} is beyond the context of {self.settings.context} tokens"
            )
        x = self.token_embedding(ids) + self.position_embedding(positions)
        new_kv = []
        for layer, block in enumerate(self.blocks):
            if past is None:
                empty = x.new_zeros(x.shape[0], block.heads, 0, x.shape[2] // block.heads)
                past_keys, past_values = empty, empty
            else:
                past_keys, past_values = past[layer, 0], past[layer, 1]
            x, keys, values = block.forward_cached(x, past_keys, past_values, mask)
            new_kv.append(torch.stack((keys, values)))
        last = self.norm(x[:, -1])
        return self.lm_head(last), self.value_head(last).squeeze(-1), torch.stack(new_kv)

    def features(self, ids: torch.Tensor) -> torch.Tensor:
        """``[B, T, width]``: the last hidden state, which both heads read."""
        _, t = ids.shape
        if t > self.settings.context:
            raise ValueError(f"sequence of {t} tokens exceeds the context {self.settings.context}")
        positions = torch.arange(t, device=ids.device)
        x = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)
