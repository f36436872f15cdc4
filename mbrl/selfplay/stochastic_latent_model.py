"""A Stochastic MuZero network as the search's model: a `search.ChanceModel` over latent tensors.

The search's decision nodes hold state latents and its chance nodes afterstate latents. A
simulation that creates an afterstate calls ``decision_fn`` (``phi`` then ``psi``: the
afterstate's Q and chance distribution), one that creates a state calls ``chance_fn`` (``g``
then ``f``), each once, batched over the roots that need it. ``LatentModel``'s interface
otherwise (``root``, ``search_root``, ``evaluate``, ``values``), so self-play, evaluation and
reanalyze take either model.

Discounts follow the search's contract: the decision edge has reward 0 and discount 1 (the
afterstate's value is the mover's, like a Q value); the chance edge carries the reward and
``gamma``, or ``-gamma`` in a two-player game where the network's turn head says the turn passed
(in Pig a roll of 1 passes it, a 2 does not, so turns cannot be assumed to alternate).
"""

from __future__ import annotations

import time

import numpy as np
import torch

import search
from mbrl.selfplay.latent_model import LatentModel


class StochasticLatentModel(LatentModel):
    def __init__(self, network: torch.nn.Module, *, discount: float, two_player: bool):
        super().__init__(network, discount=discount, two_player=two_player)
        self.discount = discount
        self.two_player = two_player

    @property
    def recurrent_fn(self) -> search.ChanceModel:
        """What `search.run` searches in (the name every caller already uses)."""
        return search.ChanceModel(self.decision_fn, self.chance_fn, self.network.num_codes)

    @torch.inference_mode()
    def decision_fn(self, latent: torch.Tensor, action: torch.Tensor):
        start = time.perf_counter()
        afterstate = self.network.afterstate(latent, action)
        chance_logits, q_logits = self.network.predict_afterstate(afterstate)
        output = search.AfterstateOutput(
            value=self.value_support.to_scalar(q_logits).cpu().numpy(),
            chance_logits=chance_logits.float().cpu().numpy(),
        )
        self._timed(start)
        return output, afterstate

    @torch.inference_mode()
    def chance_fn(self, afterstate: torch.Tensor, code: torch.Tensor):
        start = time.perf_counter()
        latent, reward_logits, turn_logit = self.network.dynamics(afterstate, code)
        logits, value_logits = self.network.predict(latent)
        discount = np.full(len(latent), self.discount, np.float32)
        if self.two_player:
            discount[(turn_logit > 0).cpu().numpy()] *= -1.0
        step = search.StepOutput(
            reward=self.reward_support.to_scalar(reward_logits).cpu().numpy(),
            discount=discount,
            prior_logits=logits.float().cpu().numpy(),
            value=self.value_support.to_scalar(value_logits).cpu().numpy(),
        )
        self._timed(start)
        return step, latent
