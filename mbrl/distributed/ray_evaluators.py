"""``RayEvaluators``: evaluations on Ray workers while the learner trains on.

``submit`` hands one evaluation (its request and a CPU copy of the weights) to the next worker
in turn, after ``free_worker`` waited for the oldest when every worker was busy: evaluations are
never skipped, only the learner slowed. Records come back in submission order (``finished``: those
ready now; ``drain``: all), each with the weights it measured (the Elo pool keeps them). A
worker that dies is restarted by Ray and gets its request again.
"""

from __future__ import annotations

import collections
from typing import NamedTuple

import torch

from mbrl.config import TrainConfig
from mbrl.distributed.cluster import back_off, close_workers, connect, cpu_weights
from mbrl.distributed.evaluate_worker import EvaluationWorker


class Pending(NamedTuple):
    ref: object  # Ray's ObjectRef of the reply
    worker: int
    request: dict
    weights: dict  # the CPU copy measured (kept for the Elo pool)
    stored: object  # ObjectRef of the same weights, sent again after a restart


class RayEvaluators:
    def __init__(self, cfg: TrainConfig):
        backend = cfg.backend
        self.ray, self._started_ray = connect(backend)
        remote = self.ray.remote(num_cpus=backend.evaluator_cpus, max_restarts=-1)(EvaluationWorker)
        self.workers = [remote.remote(cfg) for _ in range(backend.evaluators)]
        self.pending: collections.deque[Pending] = collections.deque()
        self.next_worker = 0  # round robin: the oldest pending request is on this worker
        self.restarts = 0
        self._incarnations: list[str | None] = [None] * len(self.workers)

    def free_worker(self) -> list[tuple[dict, dict]]:
        """Wait until a worker is free; returns the evaluations done by then, oldest first."""
        done = self.finished()
        if len(self.pending) == len(self.workers):
            done.append(self._result(self.pending.popleft()))
        return done

    def submit(self, request: dict, network: torch.nn.Module) -> None:
        """Start evaluating ``network`` on the next worker (after `free_worker`)."""
        assert len(self.pending) < len(self.workers), "free_worker() first"
        weights = cpu_weights(network)
        stored = self.ray.put(weights)
        worker = self.next_worker
        self.next_worker = (worker + 1) % len(self.workers)
        ref = self.workers[worker].measure.remote(request, stored)
        self.pending.append(Pending(ref, worker, request, weights, stored))

    def finished(self) -> list[tuple[dict, dict]]:
        """``(record, weights)`` of the evaluations done now, oldest first, in order."""
        done = []
        while self.pending and self.ray.wait([self.pending[0].ref], timeout=0)[0]:
            done.append(self._result(self.pending.popleft()))
        return done

    def drain(self) -> list[tuple[dict, dict]]:
        """Every evaluation still running, waited for."""
        done = []
        while self.pending:
            done.append(self._result(self.pending.popleft()))
        return done

    def _result(self, pending: Pending, failures: int = 0) -> tuple[dict, dict]:
        try:
            incarnation, record = self.ray.get(pending.ref)
        except self.ray.exceptions.RayActorError as error:
            back_off(f"evaluator {pending.worker}", failures, error)
            ref = self.workers[pending.worker].measure.remote(pending.request, pending.stored)
            return self._result(pending._replace(ref=ref), failures + 1)
        known = self._incarnations[pending.worker]
        self.restarts += known is not None and incarnation != known
        self._incarnations[pending.worker] = incarnation
        return record, pending.weights

    def close(self) -> None:
        close_workers(self.ray, self.workers, self._started_ray)
        self._started_ray = False
