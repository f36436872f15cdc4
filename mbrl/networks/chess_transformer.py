"""A decoder-only transformer over chess board tokens with a policy head over the 1,968 move
tokens and a value head over win-probability bins.

``obs [B, L]`` (board token ids as float32, `games.chess_tokens`) -> ``PolicyValue``: the last
position's state, which causal attention lets see the whole board, feeds both heads, as in
searchless chess. The value head is ``bins`` logits over win probabilities 0..1 (a
classification, which trains more stably than a regression on outcomes); ``value`` is its
expectation mapped to [-1, 1] for the search.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from games.chess_tokens import NUM_MOVES, VOCAB_SIZE
from mbrl.networks.alphazero import PolicyValue
from mbrl.networks.transformer_block import TransformerBlock, init_weights


@dataclass(frozen=True)
class ChessNetSettings:
    layers: int = 4
    heads: int = 4
    width: int = 128
    value_bins: int = 32

    def __post_init__(self):
        for name in ("layers", "heads", "width"):
            if getattr(self, name) < 1:
                raise ValueError(f"chess network {name} must be >= 1, got {getattr(self, name)}")
        if self.value_bins < 2:
            raise ValueError(f"chess network value_bins must be >= 2, got {self.value_bins}")


class ChessTransformer(nn.Module):
    def __init__(self, tokens: int, settings: ChessNetSettings = ChessNetSettings()):
        super().__init__()
        self.settings = settings
        self.obs_shape = (tokens,)
        self.num_actions = NUM_MOVES
        width = settings.width
        self.token_embedding = nn.Embedding(VOCAB_SIZE, width)
        self.position_embedding = nn.Embedding(tokens, width)
        self.blocks = nn.ModuleList(
            TransformerBlock(width, settings.heads) for _ in range(settings.layers)
        )
        self.norm = nn.LayerNorm(width)
        self.policy_head = nn.Linear(width, NUM_MOVES)
        self.value_head = nn.Linear(width, settings.value_bins)
        self.register_buffer(
            "win_probabilities", torch.linspace(0, 1, settings.value_bins), persistent=False
        )
        self.apply(init_weights)

    def forward(self, obs: torch.Tensor) -> PolicyValue:
        ids = obs.long()
        if ids.shape[1:] != self.obs_shape:
            raise ValueError(
                f"expected board tokens of shape [B, {self.obs_shape[0]}], got {tuple(obs.shape)}"
            )
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.blocks[:-1]:
            x = block(x)
        last = self.norm(self.blocks[-1](x, last_only=True)[:, 0])  # the heads read only it
        value_logits = self.value_head(last)
        win = (value_logits.softmax(-1) * self.win_probabilities).sum(-1)
        return PolicyValue(self.policy_head(last), 2 * win - 1, value_logits)
