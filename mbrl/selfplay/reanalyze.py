"""Reanalyze: fresher targets for replayed unrolls from a target network (learned models).

A target network (a copy of the learner refreshed every ``algo.target_update_every`` gradient
steps) re-estimates the n-step bootstrap values of every sample when ``algo.reanalyze_value``
is on (EfficientZero), and re-runs the search for an ``algo.reanalyze_policy`` fraction of the
samples to refresh their policy targets (MuZero Reanalyze).

The work splits in three so that the middle part can run elsewhere (``backend.reanalyzers``:
Ray workers, ``mbrl.distributed``): ``job`` gathers what the target network must see from the
replay, `reanalyze` runs the target network and the search on it (no replay needed), ``apply``
turns the fresh values and policies into targets.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

import search
from mbrl.config import AlgoConfig
from mbrl.replay.episodes import EpisodeReplay, Unroll
from search import SearchSettings


class Job(NamedTuple):
    """What the target network must see for one batch of unrolls."""

    value_obs: np.ndarray | None  # [V, ...] observations at the bootstrap positions
    policy_obs: np.ndarray | None  # [P, ...] observations whose policies are re-searched
    policy_legal: np.ndarray | None  # [P, A]
    policy_keys: np.ndarray | None  # [P] the search's keys (their replay positions)


class Fresh(NamedTuple):
    values: np.ndarray | None  # [V]
    policies: np.ndarray | None  # [P, A]


class Targets(NamedTuple):
    """An unroll's training targets after reanalysis."""

    value: np.ndarray  # [S, K+1]
    policy: np.ndarray  # [S, K+1, A]
    q_value: np.ndarray | None  # [S, K+1] the afterstate Q's own n-step targets, or None


def reanalyze(model, settings: SearchSettings, job: Job) -> Fresh:
    """The target network's values and search policies (no noise) for ``job``."""
    values = None if job.value_obs is None else model.values(job.value_obs)
    policies = None
    if job.policy_obs is not None:
        output = search.run(
            model.root(job.policy_obs),
            model.recurrent_fn,
            settings,
            legal_mask=job.policy_legal,
            keys=job.policy_keys,
            deterministic=settings.policy == "puct",
            value_prefix_horizon=model.value_prefix_horizon,
        )
        policies = output.action_weights
    return Fresh(values, policies)


class Reanalyzer:
    def __init__(
        self,
        learner_network: torch.nn.Module,
        make_model: Callable,  # network -> the search's model (a LatentModel)
        replay: EpisodeReplay,
        settings: SearchSettings,
        algo: AlgoConfig,
        remote=None,  # mbrl.distributed.RayReanalyzers, or None: here
    ):
        self.learner_network = learner_network
        self.replay, self.settings, self.algo = replay, settings, algo
        self.network = copy.deepcopy(learner_network).eval().requires_grad_(False)
        self.model = make_model(self.network)
        self.last_update = 0
        self.seconds = 0.0
        self.remote = remote

    def refresh(self, gradient_steps: int) -> None:
        """Copy the learner's weights once ``target_update_every`` steps have passed."""
        if gradient_steps - self.last_update >= self.algo.target_update_every:
            self.network.load_state_dict(self.learner_network.state_dict())
            self.last_update = gradient_steps

    def targets(self, unroll: Unroll) -> Targets:
        """The unroll's targets, reanalyzed here as configured."""
        start = time.perf_counter()
        job = self.job(unroll)
        fresh = reanalyze(self.model, self.settings, job)
        self.seconds += time.perf_counter() - start
        return self.apply(unroll, fresh)

    def submit(self, unroll: Unroll):
        """Send ``unroll``'s reanalysis to the remote workers; a ticket for `collect`."""
        return self.remote.submit(self.job(unroll), self.network, self.last_update)

    def collect(self, unroll: Unroll, ticket) -> Targets:
        start = time.perf_counter()
        fresh = self.remote.result(ticket)
        self.seconds += time.perf_counter() - start
        return self.apply(unroll, fresh)

    def job(self, unroll: Unroll) -> Job:
        value_obs = policy_obs = policy_legal = policy_keys = None
        if self.algo.reanalyze_value:
            bootstraps = np.concatenate([i[i >= 0] for i in self._bootstrap_indices(unroll)])
            if len(bootstraps):
                value_obs = self.replay.observations(bootstraps)
        positions = self._policy_positions(unroll)
        if len(positions):
            policy_obs = self.replay.observations(positions)
            policy_legal = self.replay.legal[positions % self.replay.capacity]
            policy_keys = positions.astype(np.uint64)
        return Job(value_obs, policy_obs, policy_legal, policy_keys)

    def _policy_positions(self, unroll: Unroll) -> np.ndarray:
        """The replay positions of the ``reanalyze_policy`` fraction of samples (all K+1
        steps that have a policy target)."""
        count = round(self.algo.reanalyze_policy * len(unroll.indices))
        inside = unroll.policy_mask[:count] > 0  # [count, K+1]
        return (unroll.indices[:count, None] + np.arange(inside.shape[1]))[inside]

    @staticmethod
    def _bootstrap_indices(unroll: Unroll) -> list[np.ndarray]:
        """The value targets' bootstrap positions, then the afterstate Q targets' if any."""
        q = unroll.q_targets
        return [unroll.bootstrap_index] + ([] if q is None else [q.bootstrap_index])

    def apply(self, unroll: Unroll, fresh: Fresh) -> Targets:
        """The n-step targets with the bootstrap values recomputed, and the fresh policies in
        their rows."""
        value, policy, q = unroll.value, unroll.policy, unroll.q_targets
        q_value = None if q is None else q.value
        if fresh.values is not None:  # in `job`'s order: the value targets', then Q's
            used = int((unroll.bootstrap_index >= 0).sum())
            value = _refreshed(unroll, fresh.values[:used])
            if q is not None:
                q_value = _refreshed(q, fresh.values[used:])
        if fresh.policies is not None:
            count = round(self.algo.reanalyze_policy * len(unroll.indices))
            policy = unroll.policy.copy()
            rows = policy[:count]
            rows[unroll.policy_mask[:count] > 0] = fresh.policies
        return Targets(value, policy, q_value)

    def state_dict(self) -> dict:
        return {"target_network": self.network.state_dict(), "last_target_update": self.last_update}

    def load_state_dict(self, state: dict) -> None:
        self.network.load_state_dict(state["target_network"])
        self.last_update = int(state["last_target_update"])


def _refreshed(targets, values: np.ndarray) -> np.ndarray:
    """``targets.value`` (an `Unroll` or `NStepTargets`) with its stored bootstrap values
    replaced by ``values`` (one per ``bootstrap_index >= 0``, in row order)."""
    where = targets.bootstrap_index >= 0
    new_boot = targets.bootstrap_value.copy()
    new_boot[where] = values
    delta = targets.bootstrap_discount * (new_boot - targets.bootstrap_value)
    return (targets.value + delta).astype(np.float32)
