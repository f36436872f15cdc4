"""Atari with every EfficientZero component on (experiment=atari100k_ez): throughput and where the
time goes, and the projected wall time of a full 100k-step run on this machine.

    python -m benchmarks.atari_throughput                       # Pong on this CPU
    python -m benchmarks.atari_throughput --games pong,breakout --accelerator cuda \\
        --warmup 4000 --updates 400                             # on a GPU machine

The run collects ``--warmup`` environment steps (8 games in lockstep, 50 simulations each), then
makes ``--updates`` gradient steps of the full preset (batch 256, K = 5, value prefix,
consistency, target-network values, 99% policy reanalyze) with one environment step per update.
Rates: environment steps/s and simulations/s of self-play, learner updates/s (reanalyze
included). The split is of the whole run's wall time. Extra arguments are Hydra overrides.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from benchmarks.learning_runs import compose_train
from mbrl.train import train

FULL_ENV_STEPS, FULL_UPDATES = 100_000, 98_000


def measure(game: str, args, overrides: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as run_dir:
        cfg = compose_train(
            "experiment=atari100k_ez",
            f"game.name={game}",
            f"run_dir={run_dir}",
            f"trainer.warmup_moves={args.warmup}",
            f"trainer.max_steps={args.updates}",
            f"trainer.accelerator={args.accelerator}",
            "trainer.progress_bar=false",
            "trainer.checkpoint_every=1000000",
            f"trainer.log_every={max(1, args.updates // 4)}",
            "eval.every=0",
            "eval.games=1",
            "eval.simulations=0",
            "logger.tensorboard=false",
            *overrides,
        )
        start = time.perf_counter()
        summary = train(cfg)
        wall = time.perf_counter() - start
    stats = summary["selfplay"]
    collect = stats["selfplay/collect_seconds"]
    search = stats["selfplay/search_seconds"]
    network = stats["selfplay/network_seconds"]
    env = stats["selfplay/env_seconds"]
    reanalyze = stats["selfplay/reanalyze_seconds"]
    learner = max(wall - collect - reanalyze, 1e-9)  # gradient steps, sampling, start-up
    moves = stats["selfplay/moves"]
    env_rate = moves / collect
    update_rate = args.updates / (learner + reanalyze)
    return {
        "game": game,
        "env_steps": int(moves),
        "updates": args.updates,
        "env_steps_per_s": env_rate,
        "simulations_per_s": stats["selfplay/simulations"] / search,
        "updates_per_s": update_rate,
        "split": {
            "self-play network": network,
            "self-play tree + glue": search - network,
            "environment": env,
            "self-play other": collect - search - env,
            "reanalyze": reanalyze,
            "learner": learner,
        },
        "wall_s": wall,
        "projected_hours": (FULL_ENV_STEPS / env_rate + FULL_UPDATES / update_rate) / 3600,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default="pong")
    parser.add_argument("--warmup", type=int, default=800, help="environment steps first")
    parser.add_argument("--updates", type=int, default=8, help="gradient steps after")
    parser.add_argument("--accelerator", default="cpu")
    args, overrides = parser.parse_known_args()
    results = [measure(game, args, overrides) for game in args.games.split(",")]
    print(
        f"\n{'game':<10} {'env steps':>9} {'updates':>7} {'env/s':>7} {'sims/s':>8} "
        f"{'updates/s':>9} {'wall s':>7} {'full 100k run (h)':>17}"
    )
    for r in results:
        print(
            f"{r['game']:<10} {r['env_steps']:>9} {r['updates']:>7} {r['env_steps_per_s']:>7.1f} "
            f"{r['simulations_per_s']:>8.0f} {r['updates_per_s']:>9.3f} {r['wall_s']:>7.0f} "
            f"{r['projected_hours']:>17.1f}"
        )
    for r in results:
        total = r["wall_s"]
        parts = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in r["split"].items())
        print(f"{r['game']}: {parts}")


if __name__ == "__main__":
    main()
