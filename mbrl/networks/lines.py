"""A torso that reads a square board line by line: every row and column, in both directions,
through one shared MLP (``model.torso=lines``).

In 2048 a move slides every line of the board the same way, and what it merges (the reward)
is a sum over those lines, each decided by its own four cells. An MLP over the flattened board
must discover that structure from data, and on a CPU budget it does not: fitted through
MuZero's representation, latent and dynamics to the merge rewards of random play, the
flattened board reaches a held-out correlation of about 0.5, this encoder about 0.95
(`benchmarks/game2048_reward_fit.py`; figures in docs/results.md). The encoder keeps the lines'
order, so the layers after it can still tell which line (and which direction) a feature came
from.
"""

from __future__ import annotations

import torch
from torch import nn


class LineEncoder(nn.Module):
    """``[B, C, N, N] -> [B, 4 N * hidden]``: the features of the N rows read left to right,
    the N rows right to left, the N columns top to bottom and bottom to top, in that order,
    each line's ``N`` cells (``N * C`` inputs) through the same two-layer MLP."""

    def __init__(self, in_channels: int, height: int, width: int, hidden: int):
        super().__init__()
        if height != width:
            raise ValueError(
                f"model.torso=lines needs a square board (its rows and columns share one MLP); "
                f"got {height}x{width}"
            )
        if in_channels < 1 or height < 1 or hidden < 1:
            raise ValueError(
                f"LineEncoder needs channels, size and hidden >= 1; got {in_channels}, {height}, "
                f"{hidden}"
            )
        self.size = height
        self.line = nn.Sequential(
            nn.Linear(height * in_channels, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.out_features = 4 * height * hidden

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        rows = board.permute(0, 2, 3, 1)  # [B, row, cell, C]
        columns = board.permute(0, 3, 2, 1)  # [B, column, cell, C]
        lines = torch.cat([rows, rows.flip(2), columns, columns.flip(2)], 1)  # [B, 4N, N, C]
        return self.line(lines.flatten(2)).flatten(1)
