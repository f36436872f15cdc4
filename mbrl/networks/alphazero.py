"""AlphaZero's network: a residual tower with a policy head and a value head, ``f(obs)``.

Sized from the game (observation and action shapes) and the config (channels, blocks). Board
observations ``[C, H, W]`` go through 3x3 convolutions; flat observations through an MLP tower of
the same residual shape, so any game of the protocol gets a network.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn


class PolicyValue(NamedTuple):
    logits: torch.Tensor  # [B, A] unnormalised
    value: torch.Tensor  # [B] in [-1, 1], for the player to move
    # [B, bins]: a value head over win-probability bins (None: a scalar head); ``value`` is
    # then its expectation mapped to [-1, 1], and the value loss is a cross-entropy
    value_logits: torch.Tensor | None = None


class ResidualBlock(nn.Module):
    def __init__(self, channels: int, conv: bool):
        super().__init__()
        layer = (
            (lambda: nn.Conv2d(channels, channels, 3, padding=1, bias=False))
            if conv
            else (lambda: nn.Linear(channels, channels, bias=False))
        )
        norm = nn.BatchNorm2d if conv else nn.BatchNorm1d
        self.first, self.first_norm = layer(), norm(channels)
        self.second, self.second_norm = layer(), norm(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.first_norm(self.first(x)))
        return torch.relu(x + self.second_norm(self.second(y)))


class AlphaZeroNet(nn.Module):
    """``obs [B, *obs_shape] -> PolicyValue``."""

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        num_actions: int,
        *,
        channels: int = 64,
        blocks: int = 4,
        head_channels: int = 2,
        value_hidden: int = 64,
    ):
        super().__init__()
        if len(obs_shape) not in (1, 3):
            raise ValueError(f"obs_shape must be [C, H, W] or [D], got {tuple(obs_shape)}")
        if channels < 1 or blocks < 0:
            raise ValueError(f"need channels >= 1 and blocks >= 0, got {channels}, {blocks}")
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.num_actions = int(num_actions)
        conv = len(obs_shape) == 3
        if conv:
            in_channels, height, width = self.obs_shape
            self.stem = nn.Sequential(
                nn.Conv2d(in_channels, channels, 3, padding=1, bias=False),
                nn.BatchNorm2d(channels),
                nn.ReLU(),
            )
            cells = height * width
            self.policy_head = nn.Sequential(
                nn.Conv2d(channels, head_channels, 1, bias=False),
                nn.BatchNorm2d(head_channels),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(head_channels * cells, num_actions),
            )
            self.value_head = nn.Sequential(
                nn.Conv2d(channels, 1, 1, bias=False),
                nn.BatchNorm2d(1),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(cells, value_hidden),
                nn.ReLU(),
                nn.Linear(value_hidden, 1),
            )
        else:
            self.stem = nn.Sequential(
                nn.Linear(self.obs_shape[0], channels, bias=False),
                nn.BatchNorm1d(channels),
                nn.ReLU(),
            )
            self.policy_head = nn.Linear(channels, num_actions)
            self.value_head = nn.Sequential(
                nn.Linear(channels, value_hidden), nn.ReLU(), nn.Linear(value_hidden, 1)
            )
        self.tower = nn.Sequential(*(ResidualBlock(channels, conv) for _ in range(blocks)))

    def forward(self, obs: torch.Tensor) -> PolicyValue:
        features = self.tower(self.stem(obs))
        return PolicyValue(self.policy_head(features), torch.tanh(self.value_head(features))[:, 0])
