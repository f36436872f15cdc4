"""One pre-norm transformer block (nanoGPT-shaped): self-attention (causal, or bidirectional for
an encoder), then an MLP.

Shared by the chess network (`mbrl.networks.chess_transformer`) and the LLM bridge's language
model (`llm_bridge.models.transformer`); the core owns it because imports point down only.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class TransformerBlock(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float = 0.0, causal: bool = True):
        super().__init__()
        self.causal = causal
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

    def forward(
        self, x: torch.Tensor, last_only: bool = False, keys: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x [B, T, C]`` -> ``[B, T, C]``, or with ``last_only`` just the last position's
        output ``[B, 1, C]``: the same numbers for a quarter of a last block's work, for
        networks that read only the last position (the chess transformer's heads).
        ``keys [B, T]`` (bidirectional blocks only): the positions that may be attended to
        (False on padding)."""
        if keys is not None and self.causal:
            raise ValueError("a key mask is for bidirectional blocks (causal=False)")
        b, _, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        if last_only:  # the last query sees every key, so no causal mask is needed
            q, x = q[:, -1:], x[:, -1:]
        q, k, v = (z.view(b, -1, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        mask = None if keys is None else keys[:, None, None, :]
        causal = self.causal and not last_only
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, dropout_p=dropout
        )
        return self._finish(x, y)

    def forward_cached(
        self, x: torch.Tensor, past_keys: torch.Tensor, past_values: torch.Tensor, mask
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """New positions ``x [B, N, C]`` after cached ones (``past_keys``/``past_values``
        ``[B, H, P, D]``), as in eval mode whatever the module's (no dropout). ``mask
        [B, N, P + N]`` bool: True where a new position may attend (the caller builds the
        causal pattern). Returns the output ``[B, N, C]`` and the new positions' keys and
        values ``[B, H, N, D]`` each, for the next call's cache."""
        b, _, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, -1, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        # Attention over the past and the new keys as two products, not one over their
        # concatenation: copying the past per layer cost as much as the attention itself.
        past_width = past_keys.shape[2]
        scores = torch.cat((q @ past_keys.transpose(2, 3), q @ k.transpose(2, 3)), dim=3)
        scores = (scores / math.sqrt(q.shape[3])).masked_fill(~mask[:, None], float("-inf"))
        weights = torch.softmax(scores, dim=3)
        y = weights[..., :past_width] @ past_values + weights[..., past_width:] @ v
        return self._finish(x, y), k, v

    def _finish(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The residual after attention's output ``y [B, H, T, D]``, then the MLP's."""
        b, _, c = x.shape
        x = x + self.proj(y.transpose(1, 2).reshape(b, -1, c))
        return x + self.mlp(self.norm2(x))


def init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation: normal(0, 0.02) weights, zero biases (``model.apply(...)``)."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
