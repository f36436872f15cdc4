"""The Atari-100k preset on a GPU machine (when the ``device`` tool lends one): Pong and Breakout
with every EfficientZero component on, throughput and the projected wall time of a full
100k-step run. Refuses to start without CUDA.

    python -m benchmarks.atari_gpu                          # about 2 x (warm-up + updates)
    python -m benchmarks.atari_gpu --warmup 2000 --updates 200 --games pong

Learning on Atari needs the full 100k steps (hours on one GPU); this script measures what a
short budget allows and says how long the full run would take.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from benchmarks.atari_throughput import measure


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default="pong,breakout")
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="JSON results folder")
    args, overrides = parser.parse_known_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks.atari_gpu needs CUDA; on a CPU use benchmarks.atari_throughput")
    args.accelerator = "cuda"
    print(f"device: {torch.cuda.get_device_name(0)}", flush=True)
    results = []
    for game in args.games.split(","):
        result = measure(game, args, overrides)
        results.append(result)
        print(json.dumps(result, indent=1), flush=True)
    path = os.path.join(args.out, "atari_gpu.json")
    with open(path, "w") as file:
        json.dump(results, file, indent=1)
    print(f"results written to {path}")


if __name__ == "__main__":
    main()
