"""Countdown-24's imitation ceiling: greedy test accuracy of a TinyLM pre-trained from scratch on
solver solutions of *every* training puzzle (optionally plus verifier-only extra puzzles with
other targets, here given their solver solutions too). What distillation gains is bounded by
roughly this, since its data are the search's finds on the same puzzles.

    python -m benchmarks.countdown_ceiling                       # 4 x 128, 32 solutions, 3,000 steps
    python -m benchmarks.countdown_ceiling --width 256           # 4x the parameters (~22 min)
    python -m benchmarks.countdown_ceiling --extra-train 3000    # + other-target puzzles

Prints one JSON line per run (figures in docs/results.md, "The imitation ceiling").
"""

from __future__ import annotations

import argparse
import json
import time

import lightning as L
import torch

from llm_bridge.fitting import fit
from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.objectives import LMObjective
from llm_bridge.rounds import pretrain_examples
from llm_bridge.tasks.text_tasks import make_task
from llm_bridge.tokenizer import CharTokenizer
from llm_bridge.train_text import build_env, evaluate_greedy
from mbrl.config import OptimConfig
from mbrl.system import System


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--extra-train", type=int, default=0, help="other-target puzzles to add")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--solutions", type=int, default=32, help="solver solutions per puzzle")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    L.seed_everything(args.seed, verbose=False)
    began = time.time()
    split = make_task("countdown24", extra_train=args.extra_train)
    tokenizer = CharTokenizer()
    settings = TinyLMSettings(
        tokenizer.vocab_size, context=64, layers=args.layers, heads=4, width=args.width
    )
    model = TinyLM(settings)
    env = build_env(model, tokenizer, split.task, candidates=8, max_new_tokens=40)
    examples = pretrain_examples(env, [*split.train, *split.extra], args.solutions)
    # The countdown_pretrain preset's optimiser (constant learning rate).
    optim = OptimConfig(lr=1e-3, weight_decay=0.01)
    fit(
        System(model, LMObjective(), optim),
        examples,
        steps=args.steps,
        batch_size=64,
        seed=args.seed,
    )
    record = {
        **vars(args),
        "extra_puzzles": len(split.extra),
        "sequences": len(examples),
        **evaluate_greedy(env, split.test, 0),
        "seconds": round(time.time() - began),
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
