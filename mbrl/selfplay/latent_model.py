"""A learned model as the search's model: MuZero's ``recurrent_fn`` over latent tensors.

Roots are ``h(obs)``; a simulation runs ``g`` on the parent's latent and ``f`` on the child's, one
batched call each for the whole batch. Embeddings are torch tensors indexed by node (the search
keeps them as ``[B, N + 1, ...]`` on the network's device, CPU or CUDA). With EfficientZero's
value prefix the embedding is ``(latent, h, c)`` and the search's ``is_reset`` zeroes the LSTM
state of the nodes that start a new horizon.

Discounts follow the search's contract: ``gamma`` in single-agent games, ``-gamma`` in two-player
zero-sum games (a learned model of a board game alternates the mover at every step, as in MuZero);
the model never declares a terminal state.
"""

from __future__ import annotations

import time

import numpy as np
import torch

import search
from mbrl.networks.support import ScalarSupport


class LatentModel:
    def __init__(
        self,
        network: torch.nn.Module,
        *,
        discount: float,
        two_player: bool,
        value_prefix_horizon: int = 0,
    ):
        self.network = network
        self.value_support = ScalarSupport(network.settings.support_size)
        self.reward_support = ScalarSupport(network.settings.reward_support_size)
        self.edge_discount = -discount if two_player else discount
        self.value_prefix = value_prefix_horizon > 0
        self.value_prefix_horizon = value_prefix_horizon or None  # as the search takes it
        if self.value_prefix != network.value_prefix:
            raise ValueError(
                "the search's value_prefix_horizon and the network's value_prefix must agree "
                f"(horizon {value_prefix_horizon}, network value_prefix="
                f"{network.value_prefix})"
            )
        self.network_calls = 0
        self.network_seconds = 0.0  # wall time in network calls (incl. transfers to numpy)

    @property
    def device(self) -> torch.device:
        """Where the weights live now (the loop moves the actor's network to the trainer's)."""
        return next(self.network.parameters()).device

    def _tensor(self, obs: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(obs)).to(self.device)

    def values(self, obs: np.ndarray) -> np.ndarray:
        """``f(h(obs))``'s value ``[B]`` (e.g. to bootstrap after a time limit)."""
        return self.evaluate(obs)[1]

    def _timed(self, start: float) -> None:
        self.network_calls += 1
        self.network_seconds += time.perf_counter() - start

    @torch.inference_mode()
    def evaluate(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``f(h(obs))`` as ``(policy logits [B, A], value [B])``: the raw policy."""
        start = time.perf_counter()
        logits, value_logits = self.network.predict(self.network.represent(self._tensor(obs)))
        values = self.value_support.to_scalar(value_logits).cpu().numpy()
        result = logits.float().cpu().numpy(), values
        self._timed(start)
        return result

    @torch.inference_mode()
    def root(self, obs: np.ndarray) -> search.RootOutput:
        start = time.perf_counter()
        latent = self.network.represent(self._tensor(obs))
        logits, value_logits = self.network.predict(latent)
        embedding = latent
        if self.value_prefix:
            h, c = self.network.initial_lstm_state(len(latent), latent.device)
            embedding = (latent, h[0], c[0])  # batch-first, as the search stores embeddings
        root = search.RootOutput(
            prior_logits=logits.float().cpu().numpy(),
            value=self.value_support.to_scalar(value_logits).cpu().numpy(),
            embedding=embedding,
        )
        self._timed(start)
        return root

    def search_root(self, states, obs: np.ndarray) -> search.RootOutput:
        """The roots of a search from observations ``obs`` (``states`` are not needed: the
        search plans in the learned model)."""
        del states
        return self.root(obs)

    @torch.inference_mode()
    def recurrent_fn(self, embedding, action: torch.Tensor, is_reset: np.ndarray | None = None):
        start = time.perf_counter()
        if self.value_prefix:
            latent, h, c = embedding
            latent, reward_logits, (h, c) = self.network.dynamics(
                latent, action, (h.unsqueeze(0).contiguous(), c.unsqueeze(0).contiguous())
            )
            keep = torch.from_numpy(~is_reset).to(latent.device, latent.dtype).view(1, -1, 1)
            new_embedding = (latent, (h * keep)[0], (c * keep)[0])
        else:
            latent, reward_logits, _ = self.network.dynamics(embedding, action)
            new_embedding = latent
        logits, value_logits = self.network.predict(latent)
        batch = len(latent)
        step = search.StepOutput(
            reward=self.reward_support.to_scalar(reward_logits).cpu().numpy(),
            discount=np.full(batch, self.edge_discount, np.float32),
            prior_logits=logits.float().cpu().numpy(),
            value=self.value_support.to_scalar(value_logits).cpu().numpy(),
        )
        self._timed(start)
        return step, new_embedding
