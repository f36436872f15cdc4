"""``ReanalyzeWorker``: the target network and the search of reanalysis in a Ray actor.

The learner gathers each batch's observations from its replay (``Reanalyzer.job``) and sends
them with the target network's weights when they changed; the worker returns fresh values and
policies (``mbrl.selfplay.reanalyze.reanalyze``), which the learner turns into targets. It holds
nothing the learner lacks, so a restarted one only needs the weights again.
"""

from __future__ import annotations

import os
import uuid

import torch

from mbrl.config import TrainConfig
from mbrl.parts import game_parts
from mbrl.quiet import quiet_third_party
from mbrl.selfplay.reanalyze import Fresh, Job, reanalyze
from mbrl.threads import configure_threads


class ReanalyzeWorker:
    def __init__(self, cfg: TrainConfig):
        quiet_third_party()
        configure_threads(
            torch_threads=max(1, round(cfg.backend.reanalyzer_cpus)),
            numba_threads=cfg.trainer.numba_threads,
        )
        parts = game_parts(cfg, seed=cfg.seed, batch_size=1)
        self.network = parts.network.eval().requires_grad_(False)
        self.model = parts.make_model(self.network)
        self.settings = cfg.search
        self.incarnation = uuid.uuid4().hex  # which process: Ray may restart it
        self.version = -1  # the learner's target network version it holds; -1: none yet

    def pid(self) -> int:
        return os.getpid()

    def compute(self, job: Job, weights: dict | None, version: int) -> tuple[str, int, Fresh]:
        """Fresh values and policies for ``job``, after loading ``weights`` (``version``)
        when given; the reply says which process and which weights computed them."""
        if weights is not None:
            self.network.load_state_dict(weights)
            self.version = version
        with torch.inference_mode():
            return self.incarnation, self.version, reanalyze(self.model, self.settings, job)
