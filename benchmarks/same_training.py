"""Does a refactor change training? Short seeded runs at another commit and here, compared
tensor by tensor: every weight and optimizer-state tensor of ``last.ckpt``, and the printed
summary (evaluations included). A pure refactor must print "identical" on every row.

    python -m benchmarks.same_training --base ebff823       # a commit, tag or branch
    python -m benchmarks.same_training --base HEAD~3 --runs tictactoe,cartpole_ez

The base runs in a temporary git worktree with this checkout's virtual environment, so a base
whose dependencies differ from today's may not run. Commands that a base does not understand
(keys renamed since) show as "failed at base".
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["trainer.progress_bar=false", "logger.tensorboard=false", "overwrite=true", "seed=0"]
RUNS = {
    "tictactoe": [  # Gumbel AlphaZero, random openings, board symmetries
        "experiment=tictactoe",
        "trainer.max_steps=40",
        *("eval.every=0", "eval.exhaustive=false", "eval.stop_when_perfect=false"),
        *("eval.opponents=[random]", "eval.games=4", "eval.elo_pool=0"),
    ],
    "connect_four": [  # Gumbel AlphaZero, openings, symmetry, search-value mixing, cosine
        *("experiment=connect_four", "trainer.max_steps=30", "trainer.max_train_minutes=0"),
        *("trainer.warmup_moves=600", "trainer.num_games=32", "trainer.batch_size=64"),
        *("eval.every=0", "eval.opponents=[random]", "eval.games=4", "eval.elo_pool=0"),
        "search.eval_simulations=8",
    ],
    "cartpole_ez": [
        *("experiment=cartpole", "algo=efficientzero", "trainer.max_steps=30"),
        *("trainer.warmup_moves=200", "eval.every=0", "eval.games=2"),
    ],
    "tictactoe_muzero": [
        *("game=tic_tac_toe", "algo=muzero", "model=small", "trainer.max_steps=30"),
        *("trainer.warmup_moves=200", "trainer.batch_size=32", "eval.every=0", "eval.games=2"),
        *("eval.opponents=[random]", "eval.elo_pool=0"),
    ],
    "tictactoe_muzero_reanalyze": [  # the target network's values and re-searched policies
        *("game=tic_tac_toe", "algo=muzero", "model=small", "trainer.max_steps=30"),
        *("trainer.warmup_moves=200", "trainer.batch_size=32", "eval.every=0", "eval.games=2"),
        *("eval.opponents=[random]", "eval.elo_pool=0", "algo.reanalyze_policy=0.5"),
    ],
    "countdown_distill": [
        *("experiment=countdown_distill", "model.layers=1", "model.width=16", "model.heads=2"),
        *("search.num_simulations=4", "llm.pretrain_steps=30", "llm.round_steps=4"),
        *("llm.rounds=2", "llm.round_prompts=12", "llm.eval_prompts=12"),
        *("llm.searches_per_prompt=2", "trainer.batch_size=16"),
    ],
}


def train(tree: Path, run: str, out: Path) -> dict | None:
    """Run ``run`` from ``tree``; the printed summary (None if the command failed)."""
    command = [sys.executable, "-m", "mbrl.cli.train", *RUNS[run], *QUIET, f"run_dir={out}"]
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        return None
    summary = json.loads(done.stdout[done.stdout.index("{\n") :])
    volatile = ("run_dir", "checkpoint", "resumed_from", "selfplay", "train_seconds")
    rounds = [{k: v for k, v in r.items() if k != "seconds"} for r in summary.get("rounds", [])]
    return {**{k: v for k, v in summary.items() if k not in volatile}, "rounds": rounds}


def tensors(run_dir: Path) -> dict[str, torch.Tensor]:
    """Every weight and optimizer-state tensor of the run's ``last.ckpt``, by name."""
    saved = torch.load(
        run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False
    )
    found = {f"weights/{k}": v for k, v in saved["state_dict"].items()}
    for i, optimizer in enumerate(saved["optimizer_states"]):
        for param, state in optimizer["state"].items():
            for key, value in state.items():
                if torch.is_tensor(value):
                    found[f"optimizer{i}/{param}/{key}"] = value
    return found


def compare(base: dict, here: dict) -> str:
    if base.keys() != here.keys():
        return "different tensors"
    differing = [k for k in base if not torch.equal(base[k], here[k])]
    return "identical" if not differing else f"{len(differing)} of {len(base)} differ"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--runs", default=",".join(RUNS), help=f"any of {', '.join(RUNS)}")
    args = parser.parse_args()
    runs = args.runs.split(",")
    unknown = [run for run in runs if run not in RUNS]
    if unknown:
        parser.error(f"unknown runs {unknown}; choose from {', '.join(RUNS)}")
    with tempfile.TemporaryDirectory() as scratch:
        worktree = Path(scratch) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(worktree), args.base],
            cwd=ROOT,
            check=True,
        )
        try:
            print(f"{'run':<20} {'tensors':<24} summary")
            for run in runs:
                outputs = {side: Path(scratch) / side / run for side in ("base", "here")}
                base = train(worktree, run, outputs["base"])
                here = train(ROOT, run, outputs["here"])
                if base is None or here is None:
                    failed = "failed at base" if base is None else "failed here"
                    print(f"{run:<20} {failed:<24} -")
                    continue
                same = compare(tensors(outputs["base"]), tensors(outputs["here"]))
                print(f"{run:<20} {same:<24} {'identical' if base == here else 'differs'}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT)


if __name__ == "__main__":
    main()
