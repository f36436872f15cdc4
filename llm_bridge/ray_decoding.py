"""A round's prompts decoded on Ray actors (``backend=ray`` with a language model).

The learner keeps the model, the data pool and the checkpoint, as for games; each round it
splits the prompts into ``backend.actors`` contiguous shards of whole prompts and sends each
actor its shard with the model's weights. Every actor decodes with the same methods as the
learner would (`llm_bridge.decoding`), its shard's rows numbered as in the whole batch
(``first_row``), so a search of a prompt uses the keys it would have unsharded. The replies,
concatenated in shard order, are the round's ``Decoded``.

Sampling methods (SFT on verified samples, GRPO) draw each shard's samples from a stream of its
own: a run is reproducible for a given number of actors, not equal to the embedded run. An
actor whose process dies is restarted by Ray and gets its shard again (weights included: they
travel with every shard, once per round).
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

from llm_bridge.decoding import Decoded, decode, decode_distinct
from mbrl.distributed.cluster import back_off, close_workers, connect, cpu_weights


class DecodeWorker:
    """One Ray actor: the run's language model (weights from the learner) over the task."""

    def __init__(self, model_settings: dict, task: dict, decoding: dict, torch_threads: int):
        from llm_bridge.models import TinyLM, TinyLMSettings
        from llm_bridge.tasks.text_tasks import task_from_spec
        from llm_bridge.tokenizer import CharTokenizer
        from llm_bridge.train_text import build_env
        from mbrl.quiet import quiet_third_party
        from mbrl.threads import configure_threads

        quiet_third_party()
        configure_threads(torch_threads=torch_threads, numba_threads=1)
        self.model = TinyLM(TinyLMSettings(**model_settings)).eval()
        task_split = task_from_spec(task)
        self.env = build_env(self.model, CharTokenizer(), task_split.task, **decoding)

    def pid(self) -> int:
        return os.getpid()

    def decode(self, weights: dict, items: list, distinct: bool, kwargs: dict) -> Decoded:
        self.model.load_state_dict(weights)
        function = decode_distinct if distinct else decode
        with torch.inference_mode():
            return function(self.env, items, **kwargs)


class RayDecoders:
    """The learner's handle on ``backend.actors`` decode workers."""

    def __init__(self, backend, model_settings: dict, task: dict, decoding: dict):
        self.ray, self._started_ray = connect(backend)
        remote = self.ray.remote(num_cpus=backend.actor_cpus, max_restarts=-1)(DecodeWorker)
        threads = max(1, round(backend.actor_cpus))
        self.workers = [
            remote.remote(model_settings, task, decoding, threads) for _ in range(backend.actors)
        ]
        self.restarts = 0
        self.seconds = 0.0  # the learner waiting for decodes

    def decode(
        self, model: torch.nn.Module, items: list, per_item: int, *, distinct: bool, **kwargs
    ) -> Decoded:
        """`decode` (of every item repeated ``per_item`` times) or, ``distinct``,
        `decode_distinct` of ``items``, sharded over the workers by whole items."""
        start = time.perf_counter()
        weights = self.ray.put(cpu_weights(model))
        shards = [s for s in np.array_split(np.arange(len(items)), len(self.workers)) if len(s)]
        jobs = []
        for worker, shard in enumerate(shards):
            first, last = int(shard[0]), int(shard[-1]) + 1
            if distinct:
                job_items, job = items[first:last], {**kwargs, "first_row": first}
                if kwargs.get("pass_budget"):  # each shard its items' part of the budget
                    job["pass_budget"] = round(kwargs["pass_budget"] * (last - first) / len(items))
            else:
                job_items = [item for item in items[first:last] for _ in range(per_item)]
                job = {**kwargs, "first_row": first * per_item}
            jobs.append((worker, job_items, job))
        refs = [self._send(worker, weights, *rest, distinct) for worker, *rest in jobs]
        parts = [
            self._get(ref, job, weights, distinct) for ref, job in zip(refs, jobs, strict=True)
        ]
        self.seconds += time.perf_counter() - start
        return _concatenated(parts)

    def _send(self, worker: int, weights, items: list, kwargs: dict, distinct: bool):
        return self.workers[worker].decode.remote(weights, items, distinct, kwargs)

    def _get(self, ref, job: tuple, weights, distinct: bool, failures: int = 0) -> Decoded:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayActorError as error:
            worker = job[0]
            back_off(f"decode worker {worker}", failures, error)
            self.restarts += failures == 0
            retry = self._send(worker, weights, job[1], job[2], distinct)
            return self._get(retry, job, weights, distinct, failures + 1)

    def close(self) -> None:
        close_workers(self.ray, self.workers, self._started_ray)
        self._started_ray = False


def _concatenated(parts: list[Decoded]) -> Decoded:
    return Decoded(
        completions=[c for part in parts for c in part.completions],
        rewards=np.concatenate([part.rewards for part in parts]),
        ids=[ids for part in parts for ids in part.ids],
        forward_passes=sum(part.forward_passes for part in parts),
        targets=[t for part in parts for t in part.targets],
        solutions=[s for part in parts for s in part.solutions],
    )
