"""Language-model rounds on the core's loop: one Lightning ``Trainer`` for the whole run.

A run is round 0 (pre-training on solver solutions, unless it starts from ``llm.init_from``) and
then ``llm.rounds`` rounds of the algorithm. Rounds are the LM algorithms' collection step, as
self-play is the games': `TextRounds` is the data module, and when training reaches a round's
first step it builds the round's examples with the current network (``collect``: search
decoding, or samples for the baselines) and then hands out batches drawn from them; `RoundEnd`
evaluates greedily after a round's last step, logs the record (TensorBoard ``rounds/*`` and
``rounds.jsonl``) and writes ``last.ckpt``.

Everything lives in the core's checkpoint format: the weights, the optimizer and schedule
(`System`), and this module's state (the data pool, the round in progress with its examples and
how far its draws went, the history), so a killed run resumes where it stopped, mid-round too.
``llm.keep_optimizer=false`` (the default) restarts AdamW's moments and the schedule at every
round, as separate fits used to; ``true`` keeps them across rounds.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import RandomSampler

from llm_bridge.examples import SequenceExample, collate
from mbrl.jsonl_log import append_records, read_records, rewrite_records
from mbrl.selfplay.batch_stream import stream_loader

# (round index >= 1) -> (examples, stats): the round's own data, built with the current model
Collect = Callable[[int], tuple[list[SequenceExample], dict]]


class TextRounds(L.LightningDataModule):
    def __init__(
        self,
        collect: Collect,
        evaluate: Callable[[], dict],
        *,
        pretraining: list[SequenceExample],
        keep_data: bool,
        first_round: int,
        rounds: int,
        round_steps: Callable[[int], int],
        batch_size: int,
        seed: int,
        keep_optimizer: bool = False,
    ):
        super().__init__()
        self.keep_optimizer = keep_optimizer
        self.collect_round, self.evaluate = collect, evaluate
        # Round 0 trains on `pretraining`. With `keep_data` a round trains on it plus every
        # round's data so far (`pool`: expert iteration's replay); else on its own data only.
        self.pretraining_examples, self.keep_data = pretraining, keep_data
        self.pool: list[SequenceExample] = []
        self.own: list[SequenceExample] = []  # the round in progress's own data
        self.first_round, self.rounds = first_round, rounds
        self.round_steps, self.batch_size, self.seed = round_steps, batch_size, seed
        self.round = first_round - 1  # the round in progress, or the last finished
        self.round_finished = True
        self.report: Callable[[dict], None] = lambda record: None  # set by `RoundEnd`
        self.examples: list[SequenceExample] = []
        self.stats: dict = {}
        self.pretraining = False
        self.draws = 0  # batches drawn in the round in progress
        self.history: list[dict] = []
        self._indices = iter(())
        self.started = time.time()  # when the round in progress began (this process)

    @property
    def total_steps(self) -> int:
        return sum(self.round_steps(r) for r in range(self.first_round, self.rounds + 1))

    def train_dataloader(self):
        return stream_loader(self, self.total_steps)

    def next_batch(self) -> dict[str, torch.Tensor] | None:
        """The next batch of the round in progress, starting the next round when one is
        finished; None once every round is (the trainer is told to stop)."""
        while self.round_finished:
            if self.round >= self.rounds:
                if getattr(self, "trainer", None) is not None:
                    self.trainer.should_stop = True
                return None
            self._start(self.round + 1)
            if not self.examples:  # nothing to learn from (GRPO: no group told apart)
                self.finish_round()
        self.draws += 1
        batch = collate([self.examples[next(self._indices)] for _ in range(self.batch_size)])
        batch["pretraining"] = torch.tensor(self.pretraining)
        return batch

    def _start(self, round_index: int) -> None:
        """Collect the round's data with the current model; restart the optimizer and schedule
        unless they are kept across rounds."""
        self.round, self.draws, self.round_finished = round_index, 0, False
        self.started = time.time()
        self.pretraining = round_index == 0
        if self.pretraining:
            self.own, self.stats = [], {"examples": len(self.pretraining_examples)}
        else:
            self.own, self.stats = self.collect_round(round_index)
            if self.keep_data:
                self.pool.extend(self.own)
        self.examples = self._training_examples()
        self._indices = self._draws(round_index, skip=0)
        trainer = getattr(self, "trainer", None)
        if not self.keep_optimizer and trainer is not None and trainer.global_step > 0:
            trainer.lightning_module.restart_optimizer()

    def _training_examples(self) -> list[SequenceExample]:
        if self.pretraining:
            return self.pretraining_examples
        return self.pretraining_examples + self.pool if self.keep_data else self.own

    def _draws(self, round_index: int, skip: int):
        """Example indices with replacement, seeded per round (the order a `RandomSampler` of
        the round's ``steps * batch_size`` samples gives), past the first ``skip`` batches."""
        generator = torch.Generator().manual_seed(self.seed + round_index)
        count = self.round_steps(round_index) * self.batch_size
        sampler = RandomSampler(
            self.examples, replacement=True, num_samples=count, generator=generator
        )
        indices = iter(sampler)
        for _ in range(skip * self.batch_size):
            next(indices)
        return indices

    def round_complete(self) -> bool:
        """Whether the round in progress has drawn its last batch."""
        return not self.round_finished and self.draws == self.round_steps(self.round)

    def finish_round(self) -> None:
        """Greedy evaluation, the round's record in the history, and its report."""
        record = {"round": self.round, **self.stats, **self.evaluate()}
        record["seconds"] = round(time.time() - self.started, 1)
        self.history.append(record)
        self.round_finished = True
        self.report(record)

    def state_dict(self) -> dict:
        return {
            "round": self.round,
            "round_finished": self.round_finished,
            "draws": self.draws,
            "pool": [dataclasses.asdict(e) for e in self.pool],
            # A kept round's own data is in the pool already.
            "own": [] if self.keep_data else [dataclasses.asdict(e) for e in self.own],
            "stats": self.stats,
            "pretraining": self.pretraining,
            "history": self.history,
        }

    def load_state_dict(self, state: dict) -> None:
        self.round, self.draws = int(state["round"]), int(state["draws"])
        self.round_finished = bool(state["round_finished"])
        self.pool = [SequenceExample(**e) for e in state["pool"]]
        self.own = [SequenceExample(**e) for e in state["own"]]
        self.stats, self.pretraining = dict(state["stats"]), bool(state["pretraining"])
        self.history = list(state["history"])
        if not self.round_finished:
            self.examples = self._training_examples()
            self._indices = self._draws(self.round, skip=self.draws)


class RoundEnd(L.Callback):
    """After a round's last step: `TextRounds.finish_round`; its report prints the record,
    appends it to ``rounds.jsonl``, logs ``rounds/*`` to TensorBoard and writes ``last.ckpt``."""

    def __init__(self, data: TextRounds, run_dir: Path, *, tensorboard: bool, last: Path):
        self.data, self.run_dir, self.tensorboard, self.last = data, run_dir, tensorboard, last

    def on_train_start(self, trainer, pl_module) -> None:
        self.data.report = lambda record: self._report(record, trainer)
        self._match_checkpoint()

    def _match_checkpoint(self) -> None:
        """``rounds.jsonl`` as the restored checkpoint knows it. A run killed between a round's
        append and its checkpoint appended a record that the resumed run makes again."""
        path = self.run_dir / "rounds.jsonl"
        if read_records(path) != self.data.history:
            rewrite_records(path, self.data.history)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.data.round_complete():
            self.data.finish_round()
            if self.data.round >= self.data.rounds:
                trainer.should_stop = True

    def _report(self, record: dict, trainer) -> None:
        print(json.dumps(record), flush=True)
        append_records(self.run_dir / "rounds.jsonl", [record])
        if self.tensorboard and trainer.logger:
            scalars = {
                f"rounds/{key}": value
                for key, value in record.items()
                if key != "round" and isinstance(value, int | float)
            }
            trainer.logger.log_metrics(scalars, step=record["round"])
        trainer.save_checkpoint(self.last, weights_only=False)
