"""Training throughput on an idle machine and with one core busy, by thread setting.

    python -m benchmarks.contention                       # the demo preset, 300 steps per run
    python -m benchmarks.contention --steps 600 --repeats 3

Each run is ``mbrl-train experiment=tictactoe`` for a fixed number of gradient steps (self-play
and learning alternate, so steps/s measures both), in a fresh process, under each thread
setting: torch's intra-op threads (``trainer.torch_threads``, 0 = one per core) and numba's
for the search kernels (``trainer.numba_threads``; the default is `mbrl.threads`'). "Busy" runs
the same command while another process spins on one core. On 2 cores a busy neighbour leaves a
run half the machine at worst: a drop of more than half means threads wait on each other (a
parallel region's barrier waiting for a thread that the neighbour's core is not running). Runs
are interleaved so that drift hits every setting alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SETTINGS = {  # name -> overrides
    "default (torch 2, numba 1)": (),
    "torch 2, numba 2": ("trainer.torch_threads=2", "trainer.numba_threads=2"),
    "torch 1, numba 2": ("trainer.torch_threads=1", "trainer.numba_threads=2"),
    "torch 1, numba 1": ("trainer.torch_threads=1", "trainer.numba_threads=1"),
}


def steps_per_second(steps: int, overrides: tuple[str, ...], run_dir: str) -> float:
    command = [
        sys.executable,
        "-m",
        "mbrl.cli.train",
        "experiment=tictactoe",
        f"run_dir={run_dir}",
        "overwrite=true",
        f"trainer.max_steps={steps}",
        "trainer.progress_bar=false",
        "eval.every=0",
        "eval.stop_when_perfect=false",
        "eval.exhaustive=false",
        "eval.optimality=false",
        "eval.games=2",
        *overrides,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    summary = json.loads(result.stdout[result.stdout.index("{") :])
    return summary["steps"] / summary["train_seconds"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    rates: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.repeats):
            for busy in (False, True):
                spinner = (
                    subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
                )
                try:
                    time.sleep(0.5 if busy else 0)
                    for name, overrides in SETTINGS.items():
                        rate = steps_per_second(args.steps, overrides, f"{scratch}/run")
                        rates.setdefault((name, busy), []).append(rate)
                        print(f"  {name:26s} {'busy' if busy else 'idle'}: {rate:.1f} steps/s")
                finally:
                    if spinner is not None:
                        spinner.kill()
                        spinner.wait()
    print(f"\nsteps/s, median of {args.repeats} ({args.steps} steps each, {os.cpu_count()} cores)")
    print(f"{'threads':26s} {'idle':>8s} {'1 core busy':>12s} {'busy/idle':>10s}")
    for name in SETTINGS:
        idle, busy = (float(np.median(rates[(name, b)])) for b in (False, True))
        print(f"{name:26s} {idle:8.1f} {busy:12.1f} {busy / idle:10.2f}")


if __name__ == "__main__":
    main()
