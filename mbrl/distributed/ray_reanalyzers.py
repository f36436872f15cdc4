"""``RayReanalyzers``: reanalysis on Ray workers, for the learner's pipeline of batches.

``submit`` sends one batch's job to the next worker in turn (with the target network's weights
if that worker does not hold them yet) and returns a ticket; ``result`` waits for it. Every
reply names the weights version it was computed with: a reply from a worker that Ray restarted
before it received them (it computed with its initial weights), or a worker that died during
the job, gets the job again with the weights.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import torch

from mbrl.config import TrainConfig
from mbrl.distributed.cluster import back_off, close_workers, connect, cpu_weights
from mbrl.distributed.reanalyze_worker import ReanalyzeWorker
from mbrl.selfplay.reanalyze import Fresh, Job


class Ticket(NamedTuple):
    ref: object  # Ray's ObjectRef of the reply
    worker: int
    job: Job
    version: int  # the target network's version the job needs
    weights: object  # ObjectRef of that version's weights (sent again after a restart)


class RayReanalyzers:
    def __init__(self, cfg: TrainConfig):
        backend = cfg.backend
        self.ray, self._started_ray = connect(backend)
        remote = self.ray.remote(num_cpus=backend.reanalyzer_cpus, max_restarts=-1)(ReanalyzeWorker)
        self.workers = [remote.remote(cfg) for _ in range(backend.reanalyzers)]
        self.held = [-1] * len(self.workers)  # the target network version each was sent last
        self.incarnations: list[str | None] = [None] * len(self.workers)
        self.published: tuple[int, object] = (-1, None)  # (version, its weights in Ray's store)
        self.next_worker = 0
        self.wait_seconds = 0.0
        self.restarts = 0

    @property
    def depth(self) -> int:
        """Batches reanalysed while the learner trains on one."""
        return len(self.workers)

    def submit(self, job: Job, network: torch.nn.Module, version: int) -> Ticket:
        """``job`` for the target ``network`` at ``version`` (which changes only when it does)."""
        if self.published[0] != version:
            self.published = (version, self.ray.put(cpu_weights(network)))
        worker = self.next_worker
        self.next_worker = (worker + 1) % len(self.workers)
        return self._send(worker, job, version, self.published[1])

    def _send(self, worker: int, job: Job, version: int, weights) -> Ticket:
        send = self.held[worker] != version
        self.held[worker] = version
        ref = self.workers[worker].compute.remote(job, weights if send else None, version)
        return Ticket(ref, worker, job, version, weights)

    def result(self, ticket: Ticket, failures: int = 0) -> Fresh:
        start = time.perf_counter()
        try:
            incarnation, version, fresh = self.ray.get(ticket.ref)
            known = self.incarnations[ticket.worker]
            self.restarts += known is not None and incarnation != known
            self.incarnations[ticket.worker] = incarnation
            if version != ticket.version:  # restarted before it received the weights
                raise self.ray.exceptions.RayActorError()
        except self.ray.exceptions.RayActorError as error:
            back_off(f"reanalyze worker {ticket.worker}", failures, error)
            self.held[ticket.worker] = -1
            retry = self._send(ticket.worker, ticket.job, ticket.version, ticket.weights)
            return self.result(retry, failures + 1)
        finally:
            self.wait_seconds += time.perf_counter() - start
        return fresh

    def close(self) -> None:
        close_workers(self.ray, self.workers, self._started_ray)
        self._started_ray = False
