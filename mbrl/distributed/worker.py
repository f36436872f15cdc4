"""``ActorWorker``: one self-play actor in its own process, a Ray actor.

It is built from the run's config by the same code as the embedded actor (``mbrl.parts``), so
that actor 0 plays the embedded run's games. It keeps no state the learner lacks: every reply
carries the actor's checkpoint state, and after a restart the learner sends it back, so a killed
actor's games go on exactly where its last reply left them. Each reply names the process that
made it (``incarnation``): a reply from an actor that Ray restarted between two requests,
without the state, is recognised and played again.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import NamedTuple

import numpy as np
import torch

from mbrl.config import TrainConfig
from mbrl.parts import actor_seed, game_parts, self_play_actor
from mbrl.quiet import quiet_third_party
from mbrl.threads import configure_threads


class Played(NamedTuple):
    incarnation: str  # which process played (Ray may have restarted the actor in between)
    episodes: list  # finished episodes (and segments of long ones), as the embedded actor's
    state: dict  # the actor's checkpoint state after these moves, numpy arrays
    counters: dict[str, float]  # run totals (moves, games, ...)
    timings: dict[str, float]  # this request's search/env/network seconds and its wall time
    returns: list[float]  # returns of the episodes that finished


def as_numpy(tree):
    """``tree`` with its tensors as numpy arrays (how actor states travel; see
    ``SelfPlayActor.state_dict``)."""
    if isinstance(tree, torch.Tensor):
        return tree.numpy()
    if isinstance(tree, dict):
        return {key: as_numpy(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(as_numpy(value) for value in tree)
    return tree


def as_torch(tree):
    """The inverse of `as_numpy` (checkpoints hold tensors: they load with weights_only)."""
    if isinstance(tree, np.ndarray):  # Ray hands out read-only arrays
        return torch.from_numpy(tree if tree.flags.writeable else tree.copy())
    if isinstance(tree, dict):
        return {key: as_torch(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(as_torch(value) for value in tree)
    return tree


class ActorWorker:
    def __init__(self, cfg: TrainConfig, index: int):
        quiet_third_party()
        configure_threads(
            torch_threads=max(1, round(cfg.backend.actor_cpus)),
            numba_threads=cfg.trainer.numba_threads,
        )
        seed = actor_seed(cfg.seed, index)
        torch.manual_seed(seed)  # the network's initial weights; the learner's replace them
        self.actor, self.network = self_play_actor(cfg, game_parts(cfg, seed=seed), seed=seed)
        if cfg.backend.actor_gpus > 0:
            self.network.to("cuda")
        self.incarnation = uuid.uuid4().hex

    def pid(self) -> int:
        return os.getpid()

    def state(self) -> tuple[str, dict, dict[str, float]]:
        return self.incarnation, self.actor.state_dict(tensors=False), self.actor.counters()

    def play(self, steps: int, temperature: float, weights: dict | None, state: dict | None):
        """``steps`` lockstep steps of every game, after loading ``weights`` and ``state`` when
        given (new weights; the state after a restart)."""
        if state is not None:
            self.actor.load_state_dict(as_torch(state))
        if weights is not None:
            self.network.load_state_dict(weights)
        self.actor.temperature = temperature
        self.actor.returns = []
        before, start = self.actor.timings(), time.perf_counter()
        episodes = []
        for _ in range(steps):
            episodes += self.actor.step()
        timings = {name: value - before[name] for name, value in self.actor.timings().items()}
        timings["seconds"] = time.perf_counter() - start
        state = self.actor.state_dict(tensors=False)
        counters = self.actor.counters()
        return Played(self.incarnation, episodes, state, counters, timings, self.actor.returns)
