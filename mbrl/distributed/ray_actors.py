"""``RayActors``: the learner's handle on self-play actors running as Ray actors.

The learner keeps the replay, the checkpoint and every counter; actors only play. Each request
asks one actor for ``backend.steps_per_request`` lockstep steps of its ``trainer.num_games``
games, with the newest published weights if it does not hold them yet, and gets back the
finished episodes and the actor's state.

- ``max_weight_lag = 0`` (synchronous): actors play only when the learner needs moves, all at
  once, and their replies are taken in actor order. One actor then plays exactly the embedded
  run (same seed, same weights, same episodes in the same order).
- ``max_weight_lag = L > 0`` (asynchronous): actors play ahead of the learner while the moves
  played and in flight stay within one request per actor of what the replay ratio asks for
  (back-pressure: beyond that, actors wait for the learner; below the ratio, the learner waits
  for moves). Before the learner publishes weights ``v``, it takes in every request still
  playing with weights older than ``v - L``: no move reaches the replay more than ``L``
  publications behind.
- An actor whose process dies is restarted by Ray (``max_restarts=-1``), gets its state from
  its last reply back, and replays the request: nothing is lost, and the run goes on exactly as
  if it had not died.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import NamedTuple

import torch

from mbrl.config import TrainConfig
from mbrl.distributed.cluster import back_off, close_workers, connect, cpu_weights
from mbrl.distributed.worker import ActorWorker, as_numpy, as_torch


class Request(NamedTuple):
    actor: int
    version: int  # the publication it plays with
    temperature: float


def counters_of(state: dict) -> dict[str, float]:
    """An actor's run totals as its checkpoint state holds them."""
    return {
        "moves": float(state["moves_played"]),
        "games": float(state["episodes_finished"]),
        "simulations": float(state["simulations"]),
        "resignations": float(state.get("resignations", 0)),
        "resigned_wrongly": float(state.get("resigned_wrongly", 0)),
    }


class RayActors:
    def __init__(self, cfg: TrainConfig, learner_network: torch.nn.Module):
        backend = cfg.backend
        self.ray, self._started_ray = connect(backend)
        self.lag = backend.max_weight_lag
        self.asynchronous = self.lag > 0
        self.steps = backend.steps_per_request
        self.request_moves = backend.steps_per_request * cfg.trainer.num_games
        remote = self.ray.remote(
            num_cpus=backend.actor_cpus, num_gpus=backend.actor_gpus, max_restarts=-1
        )(ActorWorker)
        self.workers = [remote.remote(cfg, index) for index in range(backend.actors)]
        # Each actor's state and totals at its last reply (the start: each builds its own).
        replies = self.ray.get([worker.state.remote() for worker in self.workers])
        self.incarnations = [incarnation for incarnation, _, _ in replies]
        self.states = [state for _, state, _ in replies]
        self.totals = [counters for _, _, counters in replies]
        self.resend_state = [False] * len(self.workers)
        self.deliver = lambda episodes: None
        self.version = 0  # publications so far
        self.weights = cpu_weights(learner_network)
        self._weights_ref = None
        self.held = [-1] * len(self.workers)  # the publication each actor holds
        self.in_flight: dict = {}  # ObjectRef -> Request
        self.timings: dict[str, float] = defaultdict(float)
        self.returns: list[float] = []
        self.restarts = 0
        self.wait_seconds = 0.0  # the learner waiting for replies
        self.replies = 0
        self.lag_sum = 0
        self.lag_max = 0
        self.actor_moves = [0.0] * len(self.workers)  # moves and seconds per actor since start
        self.actor_seconds = [0.0] * len(self.workers)

    @property
    def moves_played(self) -> int:
        return int(sum(totals["moves"] for totals in self.totals))

    def to(self, device) -> None:
        """Actors place their own networks (``backend.actor_gpus``)."""

    # -- weights ---------------------------------------------------------------------------------

    def publish(self, learner_network: torch.nn.Module) -> None:
        # Requests that would fall more than `lag` publications behind are taken in first.
        for ref, request in list(self.in_flight.items()):
            if request.version < self.version + 1 - self.lag:
                self._take(ref)
        self.version += 1
        self.weights = cpu_weights(learner_network)
        self._weights_ref = None  # put into Ray's object store when an actor first needs it

    def _weights_for(self, actor: int):
        if self.held[actor] == self.version:
            return None
        if self._weights_ref is None:
            self._weights_ref = self.ray.put(self.weights)
        return self._weights_ref

    # -- requests --------------------------------------------------------------------------------

    def _launch(self, actor: int, temperature: float):
        state = self.states[actor] if self.resend_state[actor] else None
        ref = self.workers[actor].play.remote(
            self.steps, temperature, self._weights_for(actor), state
        )
        self.in_flight[ref] = Request(actor, self.version, temperature)
        self.held[actor] = self.version
        self.resend_state[actor] = False
        return ref

    def _take(self, ref, failures: int = 0) -> None:
        """Wait for one request's reply and deliver its episodes; a dead actor is restarted
        from its last state and replays the request."""
        request = self.in_flight.pop(ref)
        start = time.perf_counter()
        try:
            played = self.ray.get(ref)
            if played.incarnation != self.incarnations[request.actor]:
                # Restarted between two requests: it played from its initial state.
                self.incarnations[request.actor] = played.incarnation
                raise self.ray.exceptions.RayActorError()
        except self.ray.exceptions.RayActorError as error:
            self.wait_seconds += time.perf_counter() - start
            back_off(f"self-play actor {request.actor}", failures, error)
            if failures == 0:  # a retry may find the actor still restarting: one death
                self.restarts += 1
                print(
                    f"self-play actor {request.actor} died; restarting it from its last state",
                    file=sys.stderr,
                    flush=True,
                )
            self.held[request.actor] = -1
            self.resend_state[request.actor] = True
            return self._take(self._launch(request.actor, request.temperature), failures + 1)
        self.wait_seconds += time.perf_counter() - start
        actor = request.actor
        self.actor_moves[actor] += played.counters["moves"] - self.totals[actor]["moves"]
        self.states[actor], self.totals[actor] = played.state, played.counters
        for name, value in played.timings.items():
            self.timings[name] += value
        self.actor_seconds[actor] += played.timings["seconds"]
        self.returns += played.returns
        lag = self.version - request.version
        self.replies += 1
        self.lag_sum += lag
        self.lag_max = max(self.lag_max, lag)
        self.deliver(played.episodes)

    def _idle(self) -> list[int]:
        busy = {request.actor for request in self.in_flight.values()}
        return [actor for actor in range(len(self.workers)) if actor not in busy]

    def _launch_ahead(self, needed: int, temperature: float) -> None:
        """Keep idle actors playing while the moves played and in flight stay within one
        request per actor of ``needed`` (the back-pressure)."""
        allowance = self.request_moves * len(self.workers)
        for actor in self._idle():
            promised = self.moves_played + self.request_moves * len(self.in_flight)
            if promised < needed + allowance:
                self._launch(actor, temperature)

    def collect(self, needed: int, temperature: float) -> None:
        """Play until at least one more request's moves have arrived."""
        if not self.asynchronous:  # every actor once, replies in actor order
            for ref in [self._launch(actor, temperature) for actor in range(len(self.workers))]:
                self._take(ref)
            return
        self._launch_ahead(needed, temperature)
        if not self.in_flight:  # enough moves, but no episode has finished yet: play on
            for actor in self._idle():
                self._launch(actor, temperature)
        ready, _ = self.ray.wait(list(self.in_flight), num_returns=1)
        self._take(ready[0])

    def poll(self, needed: int, temperature: float) -> None:
        """Asynchronous: take the replies that are ready and keep the actors playing."""
        if not self.asynchronous:
            return
        if self.in_flight:
            ready, _ = self.ray.wait(
                list(self.in_flight), num_returns=len(self.in_flight), timeout=0
            )
            for ref in ready:
                self._take(ref)
        self._launch_ahead(needed, temperature)

    # -- counters --------------------------------------------------------------------------------

    def counters(self) -> dict[str, float]:
        out = {name: sum(totals[name] for totals in self.totals) for name in self.totals[0]}
        for name in ("search_seconds", "env_seconds", "network_calls", "network_seconds"):
            out[name] = self.timings[name]
        return out

    def take_returns(self) -> list[float]:
        returns, self.returns = self.returns, []
        return returns

    def stats(self) -> dict[str, float]:
        """Per-role throughput, weight lag and queue sizes, for TensorBoard."""
        out = {
            "ray/weight_lag_mean": self.lag_sum / max(1, self.replies),
            "ray/weight_lag_max": float(self.lag_max),
            "ray/requests_in_flight": float(len(self.in_flight)),
            "ray/actor_restarts": float(self.restarts),
            "ray/learner_wait_seconds": self.wait_seconds,
            "ray/publications": float(self.version),
        }
        for actor, (moves, seconds) in enumerate(
            zip(self.actor_moves, self.actor_seconds, strict=True)
        ):
            out[f"ray/actor{actor}_moves_per_s"] = moves / max(seconds, 1e-9)
        return out

    # -- checkpointing ---------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """The embedded backend's keys (its actor is actor 0) and the other actors' states;
        requests in flight are not in it: a resumed run plays them again."""
        return {
            "actor_network": self.weights,
            "actor": as_torch(self.states[0]),
            "more_actors": [as_torch(state) for state in self.states[1:]],
        }

    def load_state_dict(self, state: dict) -> None:
        self.weights = state["actor_network"]
        self._weights_ref = None
        self.held = [-1] * len(self.workers)
        states = [state["actor"], *state.get("more_actors", [])]
        if len(states) > len(self.workers):
            print(
                f"the checkpoint has {len(states)} self-play actors, this run "
                f"{len(self.workers)}: the games in progress of the others are dropped",
                file=sys.stderr,
            )
        for actor, actor_state in enumerate(states[: len(self.workers)]):
            actor_state = as_numpy(actor_state)
            self.states[actor], self.totals[actor] = actor_state, counters_of(actor_state)
            self.resend_state[actor] = True

    def close(self) -> None:
        close_workers(self.ray, self.workers, self._started_ray)
        self._started_ray = False
