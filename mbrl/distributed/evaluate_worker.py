"""``EvaluationWorker``: the run's evaluation in a Ray actor, on a copy of the learner's weights.

It builds the learner's own evaluation from the config (`mbrl.parts.evaluation_callback`: the
same opponents, seeds and agent) and runs only its ``measure``; the learner reports the record
(TensorBoard, ``eval.jsonl``, the decision to stop). It holds nothing of the run, so a
restarted one only needs the request again.
"""

from __future__ import annotations

import os
import uuid

import torch

from mbrl.config import TrainConfig
from mbrl.parts import evaluation_callback, game_parts
from mbrl.quiet import quiet_third_party
from mbrl.threads import configure_threads


class EvaluationWorker:
    def __init__(self, cfg: TrainConfig):
        quiet_third_party()
        configure_threads(
            torch_threads=max(1, round(cfg.backend.evaluator_cpus)),
            numba_threads=cfg.trainer.numba_threads,
        )
        parts = game_parts(cfg, seed=cfg.seed, batch_size=1)
        self.network = parts.network.eval().requires_grad_(False)
        self.evaluation = evaluation_callback(cfg, parts)
        self.incarnation = uuid.uuid4().hex  # which process: Ray may restart it

    def pid(self) -> int:
        return os.getpid()

    def measure(self, request: dict, weights: dict) -> tuple[str, dict]:
        """The record of ``weights`` evaluated as the learner would; the reply names the
        process that measured it."""
        self.network.load_state_dict(weights)
        with torch.inference_mode():
            return self.incarnation, self.evaluation.measure(self.network, request)
