"""Models for the search benchmarks: a random table MDP (numpy) and a small torch MLP."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import search


def _step_output(
    reward: torch.Tensor, logits: torch.Tensor, value: torch.Tensor
) -> search.StepOutput:
    """A network's step as the search's record (single agent, discount 0.997)."""
    discount = np.full(reward.shape[0], 0.997, np.float32)
    return search.StepOutput(reward.numpy(), discount, logits.numpy(), value.numpy())


class TableModel:
    """A random MDP over ``num_states`` states: the cheapest possible model (numpy gathers)."""

    def __init__(
        self, num_actions: int, *, num_states: int = 4096, seed: int = 0, two_player: bool = False
    ):
        rng = np.random.default_rng(seed)
        self.next_state = rng.integers(0, num_states, (num_states, num_actions)).astype(np.int32)
        self.reward = rng.normal(0, 0.3, (num_states, num_actions)).astype(np.float32)
        self.discount = np.full(
            (num_states, num_actions), -1.0 if two_player else 0.997, np.float32
        )
        self.prior_logits = rng.normal(0, 1, (num_states, num_actions)).astype(np.float32)
        self.value = rng.normal(0, 1, num_states).astype(np.float32)
        self.num_states = num_states

    def tabular(self) -> search.TabularModel:
        """The same MDP as a `search.TabularModel`: looked up inside the kernels (the tree alone)."""
        return search.tabular_model(
            self.next_state, self.reward, self.discount, self.prior_logits, self.value
        )

    def root(self, batch_size: int, seed: int = 1) -> search.RootOutput:
        states = (
            np.random.default_rng(seed).integers(0, self.num_states, batch_size).astype(np.int32)
        )
        return search.RootOutput(self.prior_logits[states], self.value[states], states)

    def __call__(self, state: np.ndarray, action: np.ndarray):
        next_state = self.next_state[state, action]
        step = search.StepOutput(
            reward=self.reward[state, action],
            discount=self.discount[state, action],
            prior_logits=self.prior_logits[next_state],
            value=self.value[next_state],
        )
        return step, next_state

    def reference_model(self):
        """The same MDP for `tests.search.reference` (one root, scalars)."""
        from tests.search.reference import Transition

        def model(state, action, is_reset):
            next_state = int(self.next_state[state, action])
            transition = Transition(
                reward=float(self.reward[state, action]),
                discount=float(self.discount[state, action]),
                prior_logits=self.prior_logits[next_state],
                value=float(self.value[next_state]),
            )
            return transition, next_state

        return model


class MLPModel(nn.Module):
    """A small MuZero-style latent model: dynamics and prediction MLPs on a ``latent_dim`` state.

    About 60k parameters at ``latent_dim=64, hidden=128, A=18`` -- a 'real network' of the size
    used on classic control, small enough that the search's own cost stays visible.
    """

    def __init__(self, num_actions: int, *, latent_dim: int = 64, hidden: int = 128, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.num_actions = num_actions
        self.dynamics = nn.Sequential(
            nn.Linear(latent_dim + num_actions, hidden),
            nn.ReLU(),
            nn.Linear(hidden, latent_dim + 1),
        )
        self.prediction = nn.Sequential(
            nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_actions + 1)
        )
        self.latent_dim = latent_dim
        self.eval()

    @torch.inference_mode()
    def root(self, batch_size: int, seed: int = 1) -> search.RootOutput:
        generator = torch.Generator().manual_seed(seed)
        latent = torch.randn(batch_size, self.latent_dim, generator=generator)
        logits, value = self._predict(latent)
        return search.RootOutput(logits.numpy(), value.numpy(), latent)

    def _predict(self, latent: torch.Tensor):
        out = self.prediction(latent)
        return out[:, :-1], torch.tanh(out[:, -1])

    @torch.inference_mode()
    def __call__(self, latent: torch.Tensor, action: torch.Tensor):
        one_hot = nn.functional.one_hot(action, self.num_actions).to(latent.dtype)
        out = self.dynamics(torch.cat([latent, one_hot], dim=1))
        next_latent, reward = torch.tanh(out[:, :-1]), out[:, -1]
        logits, value = self._predict(next_latent)
        return _step_output(reward, logits, value), next_latent


class _ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))


class ConvModel(nn.Module):
    """EfficientZero-sized latent model: 64 x 6 x 6 latent, one residual block each in dynamics
    and prediction (EfficientZero's Atari defaults): the network a self-play step really pays for."""

    def __init__(self, num_actions: int, *, channels: int = 64, size: int = 6, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.num_actions, self.channels, self.size = num_actions, channels, size
        self.dynamics_conv = nn.Conv2d(channels + 1, channels, 3, padding=1, bias=False)
        self.dynamics_block = _ResidualBlock(channels)
        self.reward_head = nn.Sequential(
            nn.Conv2d(channels, 16, 1), nn.Flatten(), nn.Linear(16 * size * size, 1)
        )
        self.prediction_block = _ResidualBlock(channels)
        self.policy_head = nn.Sequential(
            nn.Conv2d(channels, 16, 1), nn.Flatten(), nn.Linear(16 * size * size, num_actions)
        )
        self.value_head = nn.Sequential(
            nn.Conv2d(channels, 16, 1), nn.Flatten(), nn.Linear(16 * size * size, 1)
        )
        self.eval()

    def _predict(self, latent: torch.Tensor):
        features = self.prediction_block(latent)
        return self.policy_head(features), torch.tanh(self.value_head(features)[:, 0])

    @torch.inference_mode()
    def root(self, batch_size: int, seed: int = 1) -> search.RootOutput:
        generator = torch.Generator().manual_seed(seed)
        latent = torch.randn(batch_size, self.channels, self.size, self.size, generator=generator)
        logits, value = self._predict(latent)
        return search.RootOutput(logits.numpy(), value.numpy(), latent)

    @torch.inference_mode()
    def __call__(self, latent: torch.Tensor, action: torch.Tensor):
        plane = (action.to(latent.dtype) / self.num_actions)[:, None, None, None].expand(
            -1, 1, self.size, self.size
        )
        next_latent = self.dynamics_block(
            torch.relu(self.dynamics_conv(torch.cat([latent, plane], dim=1)))
        )
        reward = self.reward_head(next_latent)[:, 0]
        logits, value = self._predict(next_latent)
        return _step_output(reward, logits, value), next_latent
