"""MuZero's three networks in one module: representation ``h``, dynamics ``g``, prediction ``f``.

Three torsos, chosen from the observation shape (``torso="auto"``) or by name:

- ``mlp``: flat observations ``[D]`` (CartPole), or boards flattened (``torso="mlp"``: on a 3x3
  board it trains several times faster than convolutions); the latent is a vector, the action a
  one-hot vector concatenated to it.
- ``lines``: ``mlp`` whose representation first reads a square board row by row and column by
  column (`mbrl.networks.lines`): 2048, where a move acts on every line alike.
- ``conv``: small boards ``[C, H, W]`` (tic-tac-toe, Connect Four); the latent keeps the board's
  ``H x W``, the action is a plane (one-hot cell when ``A <= H W``, else a constant ``(a+1)/A``).
- ``downsample``: images (Atari) through EfficientZero's down-sampling residual network, 96x96 to
  6x6 with 64 channels; the action is EfficientZero's constant plane ``a / A``.

Scalars (value, reward or value prefix) are categorical over ``2S + 1`` atoms (see ``support``).
Every latent is min-max normalised per sample to [0, 1] as in MuZero, so the dynamics sees inputs
of the same scale at every unroll depth. EfficientZero's value prefix replaces the reward head
by an LSTM over the unroll (its state ``(h, c)`` travels with the latent; the search zeroes it at
reset nodes), and its SimSiam projection and prediction heads feed the consistency loss.
"""

from __future__ import annotations

import itertools
import math

import torch
import torch.nn.functional as F
from torch import nn

from mbrl.config import ModelConfig
from mbrl.networks.alphazero import ResidualBlock
from mbrl.networks.lines import LineEncoder

TORSOS = ("mlp", "lines", "conv", "downsample")
VECTOR_TORSOS = ("mlp", "lines")  # a latent vector; the action a one-hot vector beside it


def normalise_latent(latent: torch.Tensor) -> torch.Tensor:
    """Min-max scale each sample's latent to [0, 1] (MuZero, Appendix G)."""
    flat = latent.flatten(1)
    low = flat.min(1, keepdim=True).values
    high = flat.max(1, keepdim=True).values
    scaled = (flat - low) / (high - low).clamp_min(1e-5)
    return scaled.view_as(latent)


def _mlp(sizes: list[int], *, last_activation: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or last_activation:
            layers += [nn.LayerNorm(b), nn.ReLU()]
    return nn.Sequential(*layers)


def vector_representation(obs_shape: tuple[int, ...], torso: str, sizes: list[int]) -> nn.Module:
    """The representation of a vector torso: an MLP with layer ``sizes`` over the flattened
    observation (``mlp``), or over the board's line features (``lines``)."""
    if torso == "lines":
        lines = LineEncoder(*obs_shape, hidden=sizes[0])
        return nn.Sequential(lines, _mlp([lines.out_features, *sizes]))
    return _mlp([math.prod(obs_shape), *sizes])


def conv_stem(in_channels: int, channels: int, blocks: int) -> nn.Sequential:
    """A 3x3 convolution to ``channels`` (batch norm, ReLU), then ``blocks`` residual blocks:
    ``[B, in_channels, H, W] -> [B, channels, H, W]``."""
    return nn.Sequential(
        nn.Conv2d(in_channels, channels, 3, padding=1, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU(),
        *(ResidualBlock(channels, conv=True) for _ in range(blocks)),
    )


def conv_head(channels: int, cells: int, hidden: int, outputs: int) -> nn.Sequential:
    """A 1x1 convolution to 16 planes, flattened, then an MLP: ``[B, channels, H, W] -> [B,
    outputs]`` (``cells = H * W``)."""
    return nn.Sequential(
        nn.Conv2d(channels, 16, 1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Flatten(),
        _mlp([16 * cells, hidden, outputs]),
    )


class DownsampleResidual(nn.Module):
    """A residual block that halves the resolution and changes the channel count."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(out_channels)
        self.skip = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(self.norm2(self.conv2(y)) + self.skip(x))


def efficientzero_downsample(in_channels: int, channels: int) -> nn.Sequential:
    """EfficientZero's encoder: /2 conv, residual, /2 residual, residual, /2 pool, residual,
    /2 pool; 96x96 in, 6x6 out."""
    half = channels // 2
    return nn.Sequential(
        nn.Conv2d(in_channels, half, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(half),
        nn.ReLU(),
        ResidualBlock(half, conv=True),
        DownsampleResidual(half, channels),
        ResidualBlock(channels, conv=True),
        nn.AvgPool2d(3, stride=2, padding=1),
        ResidualBlock(channels, conv=True),
        nn.AvgPool2d(3, stride=2, padding=1),
    )


class MuZeroNet(nn.Module):
    """``represent(obs)``, ``dynamics(latent, action, lstm)``, ``predict(latent)``, ``project``."""

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        num_actions: int,
        settings: ModelConfig,
        *,
        value_prefix: bool = False,  # EfficientZero: an LSTM predicts the reward since a reset
    ):
        super().__init__()
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.num_actions = int(num_actions)
        self.settings = s = settings
        self.value_prefix = value_prefix
        if len(self.obs_shape) not in (1, 3):
            raise ValueError(f"obs_shape must be [D] or [C, H, W], got {self.obs_shape}")
        if len(self.obs_shape) == 1 and s.torso in ("conv", "lines"):
            raise ValueError(
                f"model.torso={s.torso} needs [C, H, W] observations, got {self.obs_shape}"
            )
        if len(self.obs_shape) == 1 or s.torso in VECTOR_TORSOS:
            self.torso = "lines" if s.torso == "lines" else "mlp"
        else:
            self.torso = "downsample" if s.downsample else "conv"
        self.value_atoms = 2 * s.support_size + 1
        self.reward_atoms = 2 * s.reward_support_size + 1
        if self.torso in VECTOR_TORSOS:
            self._build_mlp()
        else:
            self._build_conv()
        self.latent_size = math.prod(self.latent_shape)
        reward_in = self._reward_features_size
        if value_prefix:
            self.reward_lstm = nn.LSTM(reward_in, s.lstm_hidden)
            self.reward_head = nn.Sequential(
                nn.LayerNorm(s.lstm_hidden),
                nn.ReLU(),
                _mlp([s.lstm_hidden, s.head_hidden, self.reward_atoms]),
            )
        else:
            self.reward_head = _mlp([reward_in, s.head_hidden, self.reward_atoms])
        self.projection = nn.Sequential(
            nn.Linear(self.latent_size, s.projection_hidden),
            nn.BatchNorm1d(s.projection_hidden),
            nn.ReLU(),
            nn.Linear(s.projection_hidden, s.projection_dim),
            nn.BatchNorm1d(s.projection_dim),
        )
        self.projection_head = nn.Sequential(
            nn.Linear(s.projection_dim, s.projection_hidden),
            nn.BatchNorm1d(s.projection_hidden),
            nn.ReLU(),
            nn.Linear(s.projection_hidden, s.projection_dim),
        )

    # -- construction ------------------------------------------------------------------------

    def _build_mlp(self) -> None:
        s, width = self.settings, self.settings.channels
        self.latent_shape = (s.latent_dim,)
        self.representation = vector_representation(
            self.obs_shape, self.torso, [width, *[width] * s.blocks, s.latent_dim]
        )
        self.dynamics_net = _mlp(
            [s.latent_dim + self.num_actions, width, *[width] * s.blocks], last_activation=True
        )
        self.dynamics_out = nn.Linear(width, s.latent_dim)
        self._reward_features_size = width
        self.prediction = _mlp([s.latent_dim, width, *[width] * s.blocks], last_activation=True)
        self.policy_head = _mlp([width, s.head_hidden, self.num_actions])
        self.value_head = _mlp([width, s.head_hidden, self.value_atoms])

    def _build_conv(self) -> None:
        s, c = self.settings, self.settings.channels
        in_channels, height, width = self.obs_shape
        if self.torso == "downsample":
            self.representation = nn.Sequential(
                efficientzero_downsample(in_channels, c),
                *(ResidualBlock(c, conv=True) for _ in range(s.blocks)),
            )
            with torch.no_grad():
                height, width = self.representation(torch.zeros(1, *self.obs_shape)).shape[-2:]
        else:
            self.representation = conv_stem(in_channels, c, s.blocks)
        self.latent_shape = (c, int(height), int(width))
        cells = int(height) * int(width)
        encoding = s.action_encoding
        if encoding == "auto":
            encoding = (
                "scalar" if self.torso == "downsample" or self.num_actions > cells else "onehot"
            )
        if encoding == "onehot" and self.num_actions > cells:
            raise ValueError(
                f"model.action_encoding=onehot needs at most {cells} actions (the latent's "
                f"{height}x{width} cells); this game has {self.num_actions}: use scalar"
            )
        self.action_encoding = encoding
        self.dynamics_net = conv_stem(c + 1, c, s.blocks)
        self.reward_conv = nn.Sequential(
            nn.Conv2d(c, 16, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten()
        )
        self._reward_features_size = 16 * cells
        self.prediction = nn.Sequential(*(ResidualBlock(c, conv=True) for _ in range(s.blocks)))
        self.policy_head = conv_head(c, cells, s.head_hidden, self.num_actions)
        self.value_head = conv_head(c, cells, s.head_hidden, self.value_atoms)

    # -- the three functions ------------------------------------------------------------------

    def represent(self, obs: torch.Tensor) -> torch.Tensor:
        """``obs [B, *obs_shape]`` (uint8 images are scaled to [0, 1]) -> latent."""
        if obs.dtype == torch.uint8:
            obs = obs.float() / 255.0
        if self.torso == "mlp":  # boards are flattened
            obs = obs.flatten(1)
        return normalise_latent(self.representation(obs.float()))

    def _encode_action(self, latent: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        action = action.long().view(-1)
        if self.torso in VECTOR_TORSOS:
            return torch.cat([latent, F.one_hot(action, self.num_actions).to(latent.dtype)], 1)
        batch, _, height, width = latent.shape
        if self.action_encoding == "onehot":
            plane = F.one_hot(action, height * width).to(latent.dtype).view(batch, 1, height, width)
        else:
            scale = (
                action.to(latent.dtype) + (0 if self.torso == "downsample" else 1)
            ) / self.num_actions
            plane = scale.view(batch, 1, 1, 1).expand(batch, 1, height, width)
        return torch.cat([latent, plane], 1)

    def initial_lstm_state(self, batch: int, device) -> tuple[torch.Tensor, torch.Tensor] | None:
        if not self.value_prefix:
            return None
        zeros = torch.zeros(1, batch, self.settings.lstm_hidden, device=device)
        return zeros, zeros.clone()

    def dynamics(self, latent: torch.Tensor, action: torch.Tensor, lstm_state=None):
        """``-> (next latent, reward or value-prefix logits [B, 2S'+1], next lstm state)``."""
        hidden = self.dynamics_net(self._encode_action(latent, action))
        if self.torso in VECTOR_TORSOS:
            next_latent, features = self.dynamics_out(hidden), hidden
        else:
            next_latent, features = hidden, self.reward_conv(hidden)
        if self.value_prefix:
            if lstm_state is None:
                lstm_state = self.initial_lstm_state(len(latent), latent.device)
            output, lstm_state = self.reward_lstm(features.unsqueeze(0), lstm_state)
            reward_logits = self.reward_head(output[0])
        else:
            reward_logits = self.reward_head(features)
        return normalise_latent(next_latent), reward_logits, lstm_state

    def predict(self, latent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``latent -> (policy logits [B, A], value logits [B, 2S+1])``."""
        features = self.prediction(latent)
        return self.policy_head(features), self.value_head(features)

    def project(self, latent: torch.Tensor, *, with_head: bool) -> torch.Tensor:
        """SimSiam: the projection of a latent; the online branch adds the prediction head."""
        projected = self.projection(latent.flatten(1))
        return self.projection_head(projected) if with_head else projected
