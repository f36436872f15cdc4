"""Reanalyze: fresher targets for replayed unrolls from a target network (learned models).

A target network (a copy of the learner refreshed every ``algo.target_update_every`` gradient
steps) re-estimates the n-step bootstrap values of every sample when ``algo.reanalyze_value``
is on (EfficientZero), and re-runs the search for an ``algo.reanalyze_policy`` fraction of the
samples to refresh their policy targets (MuZero Reanalyze).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import numpy as np
import torch

import search
from mbrl.config import AlgoConfig
from mbrl.replay.episodes import EpisodeReplay, Unroll
from search import SearchSettings


class Reanalyzer:
    def __init__(
        self,
        learner_network: torch.nn.Module,
        make_model: Callable,  # network -> the search's model (a LatentModel)
        replay: EpisodeReplay,
        settings: SearchSettings,
        algo: AlgoConfig,
    ):
        self.learner_network = learner_network
        self.replay, self.settings, self.algo = replay, settings, algo
        self.network = copy.deepcopy(learner_network).eval().requires_grad_(False)
        self.model = make_model(self.network)
        self.last_update = 0
        self.seconds = 0.0

    def refresh(self, gradient_steps: int) -> None:
        """Copy the learner's weights once ``target_update_every`` steps have passed."""
        if gradient_steps - self.last_update >= self.algo.target_update_every:
            self.network.load_state_dict(self.learner_network.state_dict())
            self.last_update = gradient_steps

    def targets(self, unroll: Unroll) -> tuple[np.ndarray, np.ndarray]:
        """``(value [S, K+1], policy [S, K+1, A])`` targets, reanalyzed as configured."""
        start = time.perf_counter()
        value = self._values(unroll) if self.algo.reanalyze_value else unroll.value
        policy = unroll.policy
        if self.algo.reanalyze_policy > 0:
            policy = self._policy(unroll)
        self.seconds += time.perf_counter() - start
        return value, policy

    def _values(self, unroll: Unroll) -> np.ndarray:
        """n-step targets with the bootstrap values recomputed by the target network."""
        where = unroll.bootstrap_index >= 0
        if not where.any():
            return unroll.value
        fresh = self.model.values(self.replay.observations(unroll.bootstrap_index[where]))
        new_boot = unroll.bootstrap_value.copy()
        new_boot[where] = fresh
        delta = unroll.bootstrap_discount * (new_boot - unroll.bootstrap_value)
        return (unroll.value + delta).astype(np.float32)

    def _policy(self, unroll: Unroll) -> np.ndarray:
        """Fresh search policies (target network, no noise) for a fraction of the samples."""
        count = round(self.algo.reanalyze_policy * len(unroll.indices))
        policy = unroll.policy.copy()
        inside = unroll.policy_mask[:count] > 0  # [count, K+1]
        if count == 0 or not inside.any():
            return policy
        positions = (unroll.indices[:count, None] + np.arange(inside.shape[1]))[inside]
        obs = self.replay.observations(positions)
        legal = self.replay.legal[positions % self.replay.capacity]
        output = search.run(
            self.model.root(obs),
            self.model.recurrent_fn,
            self.settings,
            legal_mask=legal,
            keys=positions.astype(np.uint64),
            deterministic=self.settings.policy == "puct",
            value_prefix_horizon=self.model.value_prefix_horizon,
        )
        rows = policy[:count]
        rows[inside] = output.action_weights
        return policy

    def state_dict(self) -> dict:
        return {"target_network": self.network.state_dict(), "last_target_update": self.last_update}

    def load_state_dict(self, state: dict) -> None:
        self.network.load_state_dict(state["target_network"])
        self.last_update = int(state["last_target_update"])
