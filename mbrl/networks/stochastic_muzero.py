"""Stochastic MuZero's networks (Antonoglou et al., ICLR 2022): MuZero's three functions, with the
dynamics split at an *afterstate* so that chance has a place to happen.

    state s --action a--> afterstate as = phi(s, a)        deterministic
    afterstate as --chance code c--> next state s' = g(as, c), reward r, turn change t
    prediction f(s) = (policy, value);  afterstate prediction psi(as) = (Q, sigma over codes)

The chance codes are learned, so no simulator's dice are needed: an encoder ``e`` reads the
observation that followed the chance event and picks one of ``C`` codes (one-hot, argmax of its
logits); the straight-through estimator lets the dynamics' loss train the encoder through that
argmax, a commitment loss keeps the encoder's softmax near the code it picks, and ``sigma`` learns
the codes' distribution by cross-entropy to the codes the encoder picked. Search samples nothing:
at a chance node it follows ``sigma`` (`search.stochastic`).

The torso is MuZero's MLP for flat observations (Pig) and its residual convolutions for boards
``[C, H, W]`` (``model.torso`` overrides: ``mlp``, or ``lines`` for 2048, an MLP after a reading
of the board line by line): a conv latent keeps the board's ``H x W`` cells, and an action or a
chance code enters as one-hot planes. Every latent, state or afterstate, is
min-max normalised as in MuZero. Scalars are categorical over ``2S + 1``
atoms (`mbrl.networks.support`), as in `MuZeroNet`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from mbrl.config import ModelConfig
from mbrl.networks.alphazero import ResidualBlock
from mbrl.networks.muzero import (
    VECTOR_TORSOS,
    _mlp,
    conv_head,
    conv_stem,
    normalise_latent,
    vector_representation,
)


class ChanceCode(NamedTuple):
    """The encoder's pick for a batch of transitions."""

    code: torch.Tensor  # [B, C] one-hot in value, the encoder's softmax in gradient
    index: torch.Tensor  # [B] long, the picked code
    probs: torch.Tensor  # [B, C] the encoder's softmax (what the commitment loss pulls)


def straight_through_code(encoder_logits: torch.Tensor) -> ChanceCode:
    """One-hot of the argmax in the forward pass; the softmax's gradient in the backward pass."""
    probs = torch.softmax(encoder_logits, -1)
    index = probs.argmax(-1)
    one_hot = F.one_hot(index, probs.shape[-1]).to(probs.dtype)
    return ChanceCode(one_hot + probs - probs.detach(), index, probs)


def commitment_loss(code: ChanceCode) -> torch.Tensor:
    """``[B]``: ``||onehot(c) - softmax(e)||^2``, the code held fixed (it is the target)."""
    return (code.code.detach() - code.probs).pow(2).sum(-1)


def chance_distribution_loss(chance_logits: torch.Tensor, code: ChanceCode) -> torch.Tensor:
    """``[B]``: cross-entropy of ``sigma`` (the afterstate's logits ``[B, C]``) to the picked code."""
    return F.cross_entropy(chance_logits, code.index.detach(), reduction="none")


class StochasticMuZeroNet(nn.Module):
    """``represent``, ``afterstate``, ``predict_afterstate``, ``dynamics``, ``predict`` and
    ``encode_chance``, each on a batch. ``num_codes`` is the codebook's size ``C``."""

    value_prefix = False  # per-step rewards (EfficientZero's value prefix is MuZeroNet's)

    def __init__(
        self, obs_shape: tuple[int, ...], num_actions: int, num_codes: int, settings: ModelConfig
    ):
        super().__init__()
        if num_actions < 1 or num_codes < 1:
            raise ValueError(
                f"num_actions and num_codes must be at least 1, got {num_actions} and {num_codes}"
            )
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.num_actions, self.num_codes = int(num_actions), int(num_codes)
        self.settings = s = settings
        self.value_atoms = 2 * s.support_size + 1
        self.reward_atoms = 2 * s.reward_support_size + 1
        board = len(self.obs_shape) == 3
        if s.torso in ("conv", "lines") and not board:
            raise ValueError(
                f"model.torso={s.torso} needs [C, H, W] observations, got {self.obs_shape}"
            )
        if board and s.torso in VECTOR_TORSOS:
            self.torso = s.torso
        else:
            self.torso = "conv" if board else "mlp"
        if self.torso == "conv":
            self._build_conv()
        else:
            self._build_mlp()

    def _build_mlp(self) -> None:
        s = self.settings
        width, latent = s.channels, s.latent_dim
        hidden = [width, *[width] * s.blocks]
        self.latent_shape = (latent,)
        self.representation = vector_representation(self.obs_shape, self.torso, [*hidden, latent])
        self.afterstate_net = _mlp([latent + self.num_actions, *hidden, latent])
        self.dynamics_net = _mlp([latent + self.num_codes, *hidden], last_activation=True)
        self.dynamics_out = nn.Linear(width, latent)
        self.reward_head = _mlp([width, s.head_hidden, self.reward_atoms])
        self.prediction = _mlp([latent, *hidden], last_activation=True)
        self.policy_head = _mlp([width, s.head_hidden, self.num_actions])
        self.value_head = _mlp([width, s.head_hidden, self.value_atoms])
        self.afterstate_prediction = _mlp([latent, *hidden], last_activation=True)
        self.chance_head = _mlp([width, s.head_hidden, self.num_codes])
        self.q_head = _mlp([width, s.head_hidden, self.value_atoms])
        # The encoder reads the observation the chance event produced (with the one before it,
        # so that a code can say what changed rather than what is).
        pair_shape = (2 * self.obs_shape[0], *self.obs_shape[1:])  # channels (or features) doubled
        self.chance_encoder = vector_representation(
            pair_shape, self.torso, [*hidden, self.num_codes]
        )
        # Whether the player to move changed (a logit): in Pig it depends on the die (a 1 passes
        # the turn), so a two-player model cannot assume turns alternate as MuZero's does.
        self.turn_head = _mlp([width, s.head_hidden, 1])

    def _build_conv(self) -> None:
        """The same functions over ``[channels, H, W]`` latents."""
        s, c = self.settings, self.settings.channels
        in_channels, height, width = self.obs_shape
        cells = height * width
        self.latent_shape = (c, height, width)
        self.representation = conv_stem(in_channels, c, s.blocks)
        self.afterstate_net = conv_stem(c + self.num_actions, c, s.blocks)
        self.dynamics_net = conv_stem(c + self.num_codes, c, s.blocks)
        self.reward_head = conv_head(c, cells, s.head_hidden, self.reward_atoms)
        self.turn_head = conv_head(c, cells, s.head_hidden, 1)
        self.prediction = nn.Sequential(*(ResidualBlock(c, conv=True) for _ in range(s.blocks)))
        self.policy_head = conv_head(c, cells, s.head_hidden, self.num_actions)
        self.value_head = conv_head(c, cells, s.head_hidden, self.value_atoms)
        self.afterstate_prediction = nn.Sequential(
            *(ResidualBlock(c, conv=True) for _ in range(s.blocks))
        )
        self.chance_head = conv_head(c, cells, s.head_hidden, self.num_codes)
        self.q_head = conv_head(c, cells, s.head_hidden, self.value_atoms)
        self.chance_encoder = nn.Sequential(
            conv_stem(2 * in_channels, c, s.blocks),
            conv_head(c, cells, s.head_hidden, self.num_codes),
        )

    def _with_planes(self, latent: torch.Tensor, one_hot: torch.Tensor) -> torch.Tensor:
        """``latent`` with ``one_hot [B, K]`` appended: as K features, or K constant planes."""
        one_hot = one_hot.to(latent.dtype)
        if self.torso == "conv":
            one_hot = one_hot[:, :, None, None].expand(-1, -1, *latent.shape[-2:])
        return torch.cat([latent, one_hot], 1)

    def represent(self, obs: torch.Tensor) -> torch.Tensor:
        """``obs [B, *obs_shape]`` -> state latent ``[B, *latent_shape]``."""
        obs = obs.float()
        return normalise_latent(self.representation(obs.flatten(1) if self.torso == "mlp" else obs))

    def afterstate(self, latent: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``(state latent, action [B]) -> afterstate latent`` (both ``[B, *latent_shape]``)."""
        one_hot = F.one_hot(action.long().view(-1), self.num_actions)
        return normalise_latent(self.afterstate_net(self._with_planes(latent, one_hot)))

    def predict_afterstate(self, afterstate: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``afterstate -> (chance logits [B, C], Q logits [B, 2S+1])``."""
        features = self.afterstate_prediction(afterstate)
        return self.chance_head(features), self.q_head(features)

    def dynamics(
        self, afterstate: torch.Tensor, code: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(afterstate [B, *latent_shape], code [B, C] one-hot or [B] index) -> (next state
        latent, reward logits [B, 2S'+1], turn-change logit [B])``. A one-hot code keeps the
        straight-through gradient."""
        if code.dim() == 1:
            code = F.one_hot(code.long(), self.num_codes)
        hidden = self.dynamics_net(self._with_planes(afterstate, code))
        latent = normalise_latent(hidden if self.torso == "conv" else self.dynamics_out(hidden))
        return latent, self.reward_head(hidden), self.turn_head(hidden).squeeze(-1)

    def predict(self, latent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``state latent -> (policy logits [B, A], value logits [B, 2S+1])``."""
        features = self.prediction(latent)
        return self.policy_head(features), self.value_head(features)

    def encode_chance(self, obs: torch.Tensor, next_obs: torch.Tensor) -> ChanceCode:
        """The code of the chance event between ``obs`` and ``next_obs`` (both ``[B, *obs]``)."""
        pair = torch.cat([obs.float(), next_obs.float()], 1)
        return straight_through_code(
            self.chance_encoder(pair.flatten(1) if self.torso == "mlp" else pair)
        )
