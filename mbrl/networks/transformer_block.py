"""One pre-norm transformer block (nanoGPT-shaped): causal self-attention, then an MLP.

Shared by the chess network (`mbrl.networks.chess_transformer`) and the LLM bridge's language
model (`llm_bridge.models.transformer`); the core owns it because imports point down only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class TransformerBlock(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float = 0.0):
        super().__init__()
        if width % heads:
            raise ValueError(f"model width {width} must be divisible by heads {heads}")
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )
        self.dropout = dropout

    def forward(self, x: torch.Tensor, last_only: bool = False) -> torch.Tensor:
        """``x [B, T, C]`` -> ``[B, T, C]``, or with ``last_only`` just the last position's
        output ``[B, 1, C]``: the same numbers for a quarter of a last block's work, for
        networks that read only the last position (the chess transformer's heads)."""
        b, _, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        if last_only:  # the last query sees every key, so no causal mask is needed
            q, x = q[:, -1:], x[:, -1:]
        q, k, v = (z.view(b, -1, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=not last_only, dropout_p=dropout)
        x = x + self.proj(y.transpose(1, 2).reshape(b, -1, c))
        return x + self.mlp(self.norm2(x))


def init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation: normal(0, 0.02) weights, zero biases (``model.apply(...)``)."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
