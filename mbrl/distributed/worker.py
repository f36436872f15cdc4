"""``ActorWorker``: one self-play actor in its own process, a Ray actor.

It is built from the run's config by the same code as the embedded actor (``mbrl.parts``), so
that actor 0 plays the embedded run's games. It keeps no state the learner lacks: every reply
carries the actor's checkpoint state, and after a restart the learner sends it back, so a killed
actor's games go on exactly where its last reply left them.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

import torch

from mbrl.config import TrainConfig
from mbrl.parts import actor_seed, game_parts, self_play_actor
from mbrl.quiet import quiet_third_party
from mbrl.threads import configure_threads


class Played(NamedTuple):
    episodes: list  # finished episodes (and segments of long ones), as the embedded actor's
    state: dict  # the actor's checkpoint state after these moves
    counters: dict[str, float]  # run totals (moves, games, ...)
    timings: dict[str, float]  # this request's search/env/network seconds and its wall time
    returns: list[float]  # returns of the episodes that finished


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

    def pid(self) -> int:
        return os.getpid()

    def state(self) -> tuple[dict, dict[str, float]]:
        return self.actor.state_dict(), self.actor.counters()

    def play(self, steps: int, temperature: float, weights: dict | None, state: dict | None):
        """``steps`` lockstep steps of every game, after loading ``weights`` and ``state`` when
        given (new weights; the state after a restart)."""
        if state is not None:
            self.actor.load_state_dict(state)
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
        return Played(
            episodes, self.actor.state_dict(), self.actor.counters(), timings, self.actor.returns
        )
