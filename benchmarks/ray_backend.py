"""Self-play moves/s and learner steps/s: the embedded backend against Ray with 1 and 2 actors,
in one process, rounds interleaved (a shared machine drifts), and a projection for a larger
machine from the measured per-actor and per-learner rates.

    python -m benchmarks.ray_backend                       # the connect_four preset
    python -m benchmarks.ray_backend --rounds 1 --steps 100 experiment=tictactoe
    python -m benchmarks.ray_backend --reanalysis experiment=cartpole_ez   # reanalyze workers

Each run trains ``--steps`` gradient steps after ``--skip`` steps of start-up (Ray's start, the
actors' first compilation, the warm-up moves), which the rates leave out. The rates:

- ``moves/s`` and ``steps/s``: the whole loop's, over the measured window (coupled by the
  replay ratio: steps = ratio x moves);
- ``actor moves/s``: one actor's rate while it plays (its own clock);
- ``learner steps/s``: gradient steps per second of the learner's time not spent waiting for
  moves (what a learner does with data always ready).

Extra arguments are Hydra overrides applied to every run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import lightning as L

from benchmarks.learning_runs import compose_train
from mbrl.train import train

RUNS = {  # name -> backend overrides
    "embedded": [],
    # the embedded actor's work and threads (torch's default: one per core), in a Ray actor
    "ray 1 actor, lag 0": [
        "backend=ray",
        "backend.actors=1",
        "backend.max_weight_lag=0",
        f"backend.actor_cpus={os.cpu_count()}",
    ],
    "ray 1 actor, lag 4": ["backend=ray", "backend.actors=1", "backend.max_weight_lag=4"],
    "ray 2 actors, lag 4": ["backend=ray", "backend.actors=2", "backend.max_weight_lag=4"],
}
# --reanalysis (learned models): the learner reanalyses in turn, or a Ray worker does it ahead
REANALYSIS_RUNS = {
    "embedded": [],
    "ray 1 actor, lag 4": RUNS["ray 1 actor, lag 4"],
    "+ 1 reanalyzer": [*RUNS["ray 1 actor, lag 4"], "backend.reanalyzers=1"],
}


class Window(L.Callback):
    """Clock, moves and the learner's waiting at step ``skip`` and at the end."""

    def __init__(self, skip: int):
        self.skip = skip
        self.marks: list[tuple[float, float, float, int]] = []

    def _mark(self, trainer) -> None:
        data = trainer.datamodule
        self.marks.append(
            (time.perf_counter(), data.moves_played, data.collect_seconds, trainer.global_step)
        )

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.skip:
            self._mark(trainer)

    def on_train_end(self, trainer, *args):
        self._mark(trainer)

    def rates(self) -> dict[str, float]:
        (t0, m0, c0, s0), (t1, m1, c1, s1) = self.marks
        wall, steps = t1 - t0, s1 - s0
        return {
            "moves/s": (m1 - m0) / wall,
            "steps/s": steps / wall,
            "learner steps/s": steps / max(wall - (c1 - c0), 1e-9),
        }


def measure(overrides: list[str], args) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as run_dir:
        cfg = compose_train(
            f"run_dir={run_dir}",
            f"trainer.max_steps={args.skip + args.steps}",
            "trainer.progress_bar=false",
            "eval.every=0",
            "eval.games=2",
            "eval.elo_pool=0",
            "logger=none",
            *args.overrides,
            *overrides,
        )
        window = Window(args.skip)
        summary = train(cfg, callbacks=[window])
    rates = window.rates()
    stats = summary["selfplay"]
    actor_rates = [v for k, v in stats.items() if k.endswith("_moves_per_s")]
    if actor_rates:
        rates["actor moves/s"] = sum(actor_rates) / len(actor_rates)
        rates["weight lag max"] = stats["ray/weight_lag_max"]
    else:  # the embedded actor: its moves over its time in the search and the rules
        rates["actor moves/s"] = stats["selfplay/moves"] / stats["selfplay/collect_seconds"]
    return rates


def projection(results: dict, ratio: float, cores: int) -> None:
    """Throughput of ``cores - 2`` one-core actors (a core each for the learner's process and
    the system) against the measured learner, on one machine."""
    actor = results["ray 2 actors, lag 4"]["actor moves/s"]
    learner = results["ray 1 actor, lag 4"]["learner steps/s"]
    actors = cores - 2
    supply = actors * actor
    demand = learner / ratio  # moves/s the learner consumes at the replay ratio
    print(f"\nprojection for {cores} cores (CPU learner as measured here; replay ratio {ratio}):")
    print(f"  actors: {actors} x {actor:.0f} moves/s = {supply:,.0f} moves/s")
    print(f"  learner: {learner:.1f} steps/s / {ratio} steps per move = {demand:,.0f} moves/s")
    bound = "the learner" if demand < supply else "the actors"
    steps = min(learner, supply * ratio)
    print(
        f"  the loop runs at min({learner:.1f}, {supply:,.0f} x {ratio}) = {steps:.1f} "
        f"steps/s, bound by {bound}; a learner {supply * ratio / learner:.1f}x faster "
        "(a GPU) would match the actors"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip", type=int, default=60)
    parser.add_argument("--steps", type=int, default=240)
    parser.add_argument("--cores", type=int, default=64, help="the projection's machine")
    parser.add_argument(
        "--reanalysis", action="store_true", help="compare reanalysis in the learner and on Ray"
    )
    args, overrides = parser.parse_known_args()
    args.overrides = overrides or [
        "experiment=connect_four",
        "trainer.warmup_moves=1024",
        "trainer.max_train_minutes=0",
    ]
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    compared = REANALYSIS_RUNS if args.reanalysis else RUNS
    runs: dict[str, list[dict]] = {name: [] for name in compared}
    for _ in range(args.rounds):
        for name, overrides_ in compared.items():
            runs[name].append(measure(overrides_, args))
    keys = ["moves/s", "steps/s", "actor moves/s", "learner steps/s"]
    results = {
        name: {k: sum(r[k] for r in rs) / len(rs) for k in rs[0]} for name, rs in runs.items()
    }
    base = results["embedded"]
    print(f"\n{os.cpu_count()} cores; overrides: {' '.join(args.overrides)}")
    print(f"{'run':<22}" + "".join(f"{k:>17}" for k in keys) + f"{'x embedded':>12}")
    for name, rates in results.items():
        row = f"{name:<22}" + "".join(f"{rates[k]:>17.1f}" for k in keys)
        print(row + f"{rates['steps/s'] / base['steps/s']:>12.2f}")
    if args.reanalysis:
        return
    overhead = 1 - results["ray 1 actor, lag 0"]["steps/s"] / base["steps/s"]
    print(f"\nRay's overhead at 1 actor, lag 0 (synchronous, same work): {100 * overhead:.1f}%")
    cfg = compose_train(*args.overrides)
    projection(results, cfg.trainer.replay_ratio, args.cores)


if __name__ == "__main__":
    main()
