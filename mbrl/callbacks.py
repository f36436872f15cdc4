"""Lightning callbacks around the embedded loop: self-play monitoring and periodic evaluation."""

from __future__ import annotations

import copy
import json
import time
from abc import ABC, abstractmethod
from pathlib import Path

import lightning as L
import numpy as np
from rich.console import Console
from rich.table import Table

from games import BoardGame
from games.opponents import make_opponent
from mbrl.evaluation import PolicyOptimality, play_match, rate_against_pool
from mbrl.evaluation.episodes import acting_in, run_episodes
from mbrl.evaluation.exhaustive import SEAT_LABELS, SeatResult, play_exhaustively
from mbrl.graceful_stop import EvaluationAborted, GracefulStop
from mbrl.jsonl_log import append_records, read_records, rewrite_records
from search import SearchSettings

# Elo matches are between deterministic searchers: without varied openings every game with the
# same seating would repeat. Two random plies, shared by each pair of games with seats swapped.
ELO_OPENING_PLIES = 2


class SelfPlayMonitor(L.Callback):
    """Hands new priorities back to replay after every step; every ``log_every`` steps logs the
    self-play counters and rates (games/s, simulations/s, search share of collection time)."""

    def __init__(self, log_every: int):
        self.log_every = max(1, log_every)
        self._last: tuple[float, dict] | None = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        data = trainer.datamodule
        data.update_priorities(batch["indices"], outputs["priorities"])
        if trainer.global_step % self.log_every or not trainer.is_global_zero:
            return  # with several devices, rank 0 has the data module's counters
        now, stats = time.perf_counter(), data.stats()
        if self._last is not None:
            then, previous = self._last
            elapsed = max(now - then, 1e-9)
            for name in ("moves", "games", "simulations"):
                key = f"selfplay/{name}"
                if key in stats:  # a supervised run's data module plays no games
                    stats[f"{key}_per_s"] = (stats[key] - previous[key]) / elapsed
            if "selfplay/collect_seconds" in stats:
                collect = stats["selfplay/collect_seconds"] - previous["selfplay/collect_seconds"]
                stats["selfplay/share_of_wall_time"] = collect / elapsed
        self._last = (now, stats)
        if trainer.logger is not None:
            trainer.logger.log_metrics(stats, step=trainer.global_step)
        if "selfplay/games" in stats:
            pl_module.log("games", stats["selfplay/games"], prog_bar=True, logger=False)


class PeriodicEvaluation(L.Callback, ABC):
    """Evaluates every ``every`` gradient steps and once at the end (unless the last step was
    just evaluated), keeping the training clock without the evaluations' time.

    An evaluation is `measure` (play the games: in any process) then `report` (TensorBoard,
    ``eval.jsonl``, the console, the decision to stop: the learner). By default the learner
    measures in turn; with `evaluate_remotely` (``backend.evaluators``) Ray workers measure a
    copy of the weights while the learner trains on, and each record is reported, under the
    step it was taken at, once it is back."""

    every: int
    log_path: Path  # eval.jsonl, one record per evaluation (its "step" among the keys)
    _clock: float | None = None
    train_seconds: float = 0.0
    max_train_seconds: float = 0.0  # 0 = no limit; see `limit_training_time`
    stop: GracefulStop | None = None  # a stop signal skips or abandons evaluations
    remote = None  # mbrl.distributed.RayEvaluators, or None: measured here, in turn

    def watch(self, stop: GracefulStop) -> None:
        """After ``stop`` receives a signal, evaluations are skipped, and one in progress is
        abandoned: the run should end quickly with its checkpoint."""
        self.stop = stop

    def evaluate_remotely(self, evaluators) -> None:
        """Measure on ``evaluators`` (`mbrl.distributed.RayEvaluators`), which this closes."""
        self.remote = evaluators

    def limit_training_time(self, minutes: float) -> None:
        """Stop once the training clock (evaluations excluded) passes ``minutes``: a time budget
        that does not shrink when evaluations are made more frequent or stronger."""
        self.max_train_seconds = 60.0 * minutes

    def training_seconds(self) -> float:
        """Training wall time so far, evaluations excluded."""
        running = 0.0 if self._clock is None else time.perf_counter() - self._clock
        return self.train_seconds + running

    def _forget_evaluations_after(self, step: int) -> None:
        """A resumed run redoes the steps after its checkpoint, and their evaluations with them:
        the records of those steps, written before the run was killed, go first, else each
        would be in ``eval.jsonl`` twice (from two networks that need not agree)."""
        if not self.log_path.exists():
            return
        records = read_records(self.log_path)
        kept = [record for record in records if not _step_after(record, step)]
        if len(kept) < len(records):
            rewrite_records(self.log_path, kept)

    def _out_of_time(self) -> bool:
        return 0 < self.max_train_seconds <= self.training_seconds()

    def _resumed_done(self) -> bool:
        """True when a resumed run had already met its stopping condition."""
        return False

    def _stopping(self) -> bool:
        return self.stop is not None and self.stop.received is not None

    def on_train_start(self, trainer, pl_module):
        self._clock = time.perf_counter()
        self._forget_evaluations_after(trainer.global_step)
        if self._resumed_done() or self._out_of_time():
            trainer.should_stop = True

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self.every and trainer.global_step % self.every == 0:
            self._evaluate_unless_stopped(trainer, pl_module)
        if self.remote is not None:
            self._report_all(trainer, self.remote.finished())
        if self._out_of_time():
            trainer.should_stop = True

    def on_train_end(self, trainer, pl_module):
        if not self.every or trainer.global_step % self.every:
            self._evaluate_unless_stopped(trainer, pl_module)
        if self.remote is not None:
            if not self._stopping():  # a stop signal abandons evaluations in progress
                self._report_all(trainer, self.remote.drain())
            self._close_remote()

    def on_exception(self, trainer, pl_module, exception):
        self._close_remote()

    def _close_remote(self) -> None:
        if self.remote is not None:
            self.remote.close()
            self.remote = None

    def _evaluate_unless_stopped(self, trainer, pl_module) -> None:
        if self.stop is None:
            self.evaluate(trainer, pl_module)
            return
        if self._stopping():
            return
        try:
            with self.stop.abortable():
                self.evaluate(trainer, pl_module)
        except EvaluationAborted:
            self._clock = time.perf_counter()  # the training clock resumes (the run is ending)

    def evaluate(self, trainer, pl_module) -> None:
        """Measure the learner's network now (here, or handed to a remote evaluator, waiting
        only while every evaluator is busy) and report what is measured."""
        now = time.perf_counter()
        self._pause_clock(now)
        if self.remote is None:
            network = copy.deepcopy(pl_module.network).eval()
            record = self.measure(network, self.request(trainer))
            self._report_all(trainer, [(record, network.state_dict())])
        else:  # what finished first: with one evaluator the Elo pool is the learner's
            self._report_all(trainer, self.remote.free_worker())
            self.remote.submit(self.request(trainer), pl_module.network)
        self._clock = time.perf_counter()
        self._resume_clock(now, self._clock)

    def _pause_clock(self, now: float) -> None:
        self.train_seconds += now - (self._clock or now)

    def _resume_clock(self, paused: float, now: float) -> None:
        """Hook: the evaluation took ``now - paused`` seconds of the learner's time."""

    def _report_all(self, trainer, measured) -> None:
        for record, weights in measured:
            self.report(trainer, record, weights)

    @abstractmethod
    def request(self, trainer) -> dict:
        """What `measure` needs besides the weights (step, clocks; plain values and tensors)."""

    @abstractmethod
    def measure(self, network, request: dict) -> dict:
        """Play the evaluation with ``network``; returns its record (plain values)."""

    @abstractmethod
    def report(self, trainer, record: dict, weights: dict) -> None:
        """Log and keep ``record`` (``weights``: the network it measured); may stop the run."""


class EvaluationCallback(PeriodicEvaluation):
    """Every ``every`` steps (and at the end): matches against fixed opponents, the raw policy's
    minimax optimality where the game is solvable, exhaustive play against every opponent move
    (small games), and Elo against earlier checkpoints. Results go to TensorBoard, to
    ``eval.jsonl`` in the run directory and to the console. With ``stop_when_perfect`` training
    stops at perfect play: no losing line when exhaustive, else no game lost to minimax."""

    def __init__(
        self,
        game: BoardGame,
        settings: SearchSettings,
        *,
        every: int,
        games: int,
        opponents: list[str],
        simulations: int,
        elo_pool: int,
        elo_games: int,
        optimality: bool,
        stop_when_perfect: bool,
        exhaustive: bool = False,
        run_dir: Path,
        seed: int,
        make_agent,
        held_out=None,
    ):
        for name, value, low in [
            ("every", every, 0),
            ("games", games, 1),
            ("simulations", simulations, 0),
            ("elo_pool", elo_pool, 0),
            ("elo_games", elo_games, 1),
        ]:
            if value < low:
                raise ValueError(f"eval.{name} must be >= {low}, got {value}")
        self.game, self.settings = game, settings
        # (network, simulations, name) -> a player: a search over the true game (AlphaZero)
        # or over the learned model (MuZero).
        self.make_agent = make_agent
        # (network) -> metrics on positions a supervised run never trained on (or None)
        self.held_out = held_out
        self.every, self.games, self.simulations = every, games, simulations
        self.opponents = [make_opponent(spec, game.game) for spec in opponents]
        self.elo_pool, self.elo_games = elo_pool, elo_games
        self.optimality = PolicyOptimality(game) if optimality else None
        self.stop_when_perfect, self.exhaustive = stop_when_perfect, exhaustive
        if (
            stop_when_perfect
            and not exhaustive
            and "minimax" not in [o.name for o in self.opponents]
        ):
            raise ValueError(
                "eval.stop_when_perfect needs eval.exhaustive=true or 'minimax' in eval.opponents"
            )
        self.log_path = Path(run_dir) / "eval.jsonl"
        self.seed = seed
        self.pool: list[dict] = []  # {"step", "rating", "weights"}
        self.train_seconds = 0.0  # wall time outside evaluation
        self.wall_seconds = 0.0  # wall time in all, evaluation included
        self._clock = None
        self.perfect_at: dict | None = None

    def _resumed_done(self) -> bool:
        return self.stop_when_perfect and self.perfect_at is not None

    def _pause_clock(self, now: float) -> None:
        self.wall_seconds += now - (self._clock or now)
        super()._pause_clock(now)

    def _resume_clock(self, paused: float, now: float) -> None:
        self.wall_seconds += now - paused

    def request(self, trainer) -> dict:
        return {
            "step": trainer.global_step,
            "train_seconds": round(self.train_seconds, 2),
            "wall_seconds": round(self.wall_seconds, 2),  # up to the start of this evaluation
            "pool": self.pool,  # earlier networks, the Elo anchors
        }

    def measure(self, network, request: dict) -> dict:
        agent = self.make_agent(network, self.simulations, "agent")
        record = {key: value for key, value in request.items() if key != "pool"}
        for index, opponent in enumerate(self.opponents):
            result = play_match(self.game, agent, opponent, self.games, seed=self.seed + index)
            record[opponent.name] = result.as_dict()
        if self.optimality is not None:
            record["policy_optimal"] = self.optimality(agent.model)
        if self.exhaustive:
            record["exhaustive"] = play_exhaustively(self.game, agent).as_dict()
        if self.elo_pool:
            record["elo"] = self._rate(agent, network, request["pool"])
        if self.held_out is not None:
            record["held_out"] = self.held_out(network)
        return record

    def report(self, trainer, record: dict, weights: dict) -> None:
        if trainer.logger is not None:
            trainer.logger.log_metrics(self._metrics(record), step=record["step"])
        self._print(record)
        append_records(self.log_path, [record])
        if self.elo_pool:
            weights = {k: v.detach().clone() for k, v in weights.items()}
            entry = {"step": record["step"], "rating": record["elo"], "weights": weights}
            self.pool = [*self.pool, entry][-self.elo_pool :]
        if self.stop_when_perfect and _perfect(record):
            self.perfect_at = self.perfect_at or record
            trainer.should_stop = True

    def _metrics(self, record: dict) -> dict[str, float]:
        metrics = {}
        for opponent in self.opponents:
            result = record[opponent.name]
            for key in ("wins", "draws", "losses"):
                metrics[f"eval/{opponent.name}/{key}"] = result[key] / result["games"]
        if "policy_optimal" in record:
            metrics["eval/policy_optimal"] = record["policy_optimal"]
        for seat, lines in record.get("exhaustive", {}).items():
            metrics[f"eval/exhaustive/{seat}_losing_lines"] = lines["losses"]
        if "elo" in record:
            metrics["eval/elo"] = record["elo"]
        for key, value in record.get("held_out", {}).items():
            metrics[f"eval/held_out/{key}"] = value
        return metrics

    def _rate(self, agent, network, pool: list[dict]) -> float:
        """Elo of ``network`` against the pool of earlier ones (the first is 0)."""
        results = []
        for index, entry in enumerate(pool):
            past = copy.deepcopy(network)
            past.load_state_dict(entry["weights"])
            opponent = self.make_agent(past, self.simulations, f"step{entry['step']}")
            match = play_match(
                self.game,
                agent,
                opponent,
                self.elo_games,
                seed=self.seed + 100 + index,
                opening_plies=ELO_OPENING_PLIES,
            )
            results.append((entry["rating"], match.score, match.games))
        return rate_against_pool(results) if results else 0.0

    def _print(self, record: dict) -> None:
        table = Table(title=f"evaluation at step {record['step']}", title_justify="left")
        for column in ("opponent", "W", "D", "L", "score"):
            table.add_column(column, justify="right")
        for opponent in self.opponents:
            r = record[opponent.name]
            table.add_row(
                opponent.name,
                str(r["wins"]),
                str(r["draws"]),
                str(r["losses"]),
                f"{r['score']:.2f}",
            )
        for seat, lines in record.get("exhaustive", {}).items():  # every line, counted
            counts = (str(lines[k]) for k in ("wins", "draws", "losses"))
            table.add_row(SEAT_LABELS[seat], *counts, f"{SeatResult(**lines).score:.2f}")
        extras = [f"{k}={record[k]:.3f}" for k in ("policy_optimal", "elo") if k in record]
        extras += [f"{k}={v:.3f}" for k, v in record.get("held_out", {}).items()]
        Console(stderr=True).print(table, *extras)

    def state_dict(self) -> dict:
        return {
            "pool": self.pool,
            "train_seconds": self.train_seconds,
            "wall_seconds": self.wall_seconds,
            "perfect_at": json.dumps(self.perfect_at),
        }

    def load_state_dict(self, state: dict) -> None:
        self.pool = list(state["pool"])
        self.train_seconds = float(state["train_seconds"])
        self.wall_seconds = float(state.get("wall_seconds", self.train_seconds))
        self.perfect_at = json.loads(state.get("perfect_at", "null"))


def _step_after(record, step: int) -> bool:
    """Whether ``record`` is an evaluation of a step after ``step`` (a line that is no such
    record, edited in by hand, say, is kept as it is)."""
    return (
        isinstance(record, dict) and isinstance(record.get("step"), int) and record["step"] > step
    )


def _perfect(record: dict) -> bool:
    """No losing line in either seat when play was exhaustive; else no game lost to minimax."""
    if "exhaustive" in record:
        return all(record["exhaustive"][seat]["losses"] == 0 for seat in ("first", "second"))
    return record["minimax"]["losses"] == 0


class EpisodeEvaluationCallback(PeriodicEvaluation):
    """Single-agent evaluation: every ``every`` steps (and at the end) plays ``episodes``
    episodes with a noise-free search on a fresh evaluation environment and logs their mean,
    median, minimum and maximum return (TensorBoard, ``eval.jsonl``, console). With
    ``target_return`` set, training stops once the mean return reaches it (benchmarks measure
    the steps and time to get there)."""

    def __init__(
        self,
        make_env,
        make_agent,
        *,
        every: int,
        episodes: int,
        simulations: int,
        run_dir: Path,
        seed: int,
        target_return: float | None = None,
        normalize=None,
        extra_measures=(),
    ):
        if every < 0 or episodes < 1 or simulations < 0:
            raise ValueError(
                f"need eval.every >= 0, eval.games >= 1, eval.simulations >= 0; got {every}, "
                f"{episodes}, {simulations}"
            )
        self.make_env, self.make_agent = make_env, make_agent
        self.every, self.episodes, self.simulations = every, episodes, simulations
        self.log_path = Path(run_dir) / "eval.jsonl"
        self.seed = seed
        self.target_return = target_return
        self.normalize = normalize  # raw return -> e.g. Atari's human-normalized score
        # .measure(agent) -> {metric: value}, logged beside the returns (Pig's optimal share)
        self.extra_measures = tuple(extra_measures)
        self.train_seconds = 0.0
        self._clock = None
        self.solved_at: dict | None = None

    @property
    def perfect_at(self) -> dict | None:  # the name train() reports
        return self.solved_at

    def _resumed_done(self) -> bool:
        return self.target_return is not None and self.solved_at is not None

    def request(self, trainer) -> dict:
        return {
            "step": trainer.global_step,
            "env_steps": int(trainer.datamodule.moves_played),
            "train_seconds": round(self.train_seconds, 2),
        }

    def measure(self, network, request: dict) -> dict:
        agent = self.make_agent(network, self.simulations, "agent")
        env = self.make_env()
        returns = run_episodes(env, acting_in(env, agent), self.episodes, seed=self.seed + 10**6)
        record = {
            **request,
            "return_mean": float(np.mean(returns)),
            "return_median": float(np.median(returns)),
            "return_min": float(np.min(returns)),
            "return_max": float(np.max(returns)),
            "episodes": len(returns),
        }
        if self.normalize is not None:
            record["human_normalized_mean"] = float(np.mean([self.normalize(r) for r in returns]))
        for extra in self.extra_measures:
            record.update(extra.measure(agent))
        return record

    def report(self, trainer, record: dict, weights: dict) -> None:
        request_keys = ("step", "env_steps", "train_seconds", "episodes")
        if trainer.logger is not None:
            metrics = {f"eval/{k}": v for k, v in record.items() if k not in request_keys}
            trainer.logger.log_metrics(metrics, step=record["step"])
        extras = "".join(
            f", {k} {v:.3f}"
            for k, v in record.items()
            if k not in request_keys and not k.startswith(("return_", "human_"))
        )
        Console(stderr=True).print(
            f"evaluation at step {record['step']} ({record['env_steps']} env steps): return "
            f"mean {record['return_mean']:.1f}, median {record['return_median']:.1f}, "
            f"min {record['return_min']:.1f}, max {record['return_max']:.1f} over "
            f"{record['episodes']} episodes{extras}"
        )
        append_records(self.log_path, [record])
        if self.target_return is not None and record["return_mean"] >= self.target_return:
            self.solved_at = self.solved_at or record
            trainer.should_stop = True

    def state_dict(self) -> dict:
        return {"train_seconds": self.train_seconds, "solved_at": json.dumps(self.solved_at)}

    def load_state_dict(self, state: dict) -> None:
        self.train_seconds = float(state["train_seconds"])
        self.solved_at = json.loads(state.get("solved_at", "null"))
