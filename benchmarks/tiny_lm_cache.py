"""The TinyLM's KV cache (``llm.kv_cache=true``) against recompute, on a training round's work.

    python -m benchmarks.tiny_lm_cache --run-dir runs/cd_pre30          # a trained start
    python -m benchmarks.tiny_lm_cache --prompts 8 --samples 2 --simulations 4   # CI size

Two workloads of one Countdown round, on the first ``--prompts`` training puzzles: sampling
``--samples`` completions per puzzle (how SFT on verified samples, GRPO and REINFORCE collect)
and one MCTS search per puzzle with ``--simulations`` per decision (how search distillation
collects). Both adapters wrap the same model (``--run-dir``'s checkpoint, or a random TinyLM of
the preset's size), run interleaved (a busy machine slows both alike), and the fastest of
``--repeats`` counts. Both must give the same completions and spend the same forward passes
(the cache changes the numbers only by float rounding); the table also gives the keys and
values the cached tree holds at the end.
"""

from __future__ import annotations

import argparse
import time

import torch

from llm_bridge.decoding import decode
from llm_bridge.kv_cache import KVCache
from llm_bridge.lm_checkpoint import load_lm
from llm_bridge.models import TinyLM, TinyLMSettings
from llm_bridge.tasks.text_tasks import make_task
from llm_bridge.text_env import TextEnv
from llm_bridge.tokenizer import CharTokenizer
from llm_bridge.transformer_adapter import TransformerAdapter

MODES = ("kv cache", "recompute")  # use_cache True / False
WIDTH, MAX_NEW_TOKENS = 8, 40  # the Countdown presets' candidates and new tokens


def load_model(run_dir: str | None, seed: int) -> tuple[TinyLM, str]:
    if run_dir:
        return load_lm(run_dir).model, run_dir
    torch.manual_seed(seed)
    settings = TinyLMSettings(CharTokenizer().vocab_size)  # the preset's 4 x 128, 64 tokens
    return TinyLM(settings), "a random TinyLM (4 layers, 128 wide)"


def cached_megabytes(env: TextEnv) -> float:
    """Keys and values held by the nodes the last decoding left in ``env``: every node's own
    tokens, and each distinct prompt once."""
    own, prompts = 0, {}
    for node in env._seen.values():
        cache = node.state.cache
        if isinstance(cache, KVCache):
            own += cache.own.nbytes
            prompts[id(cache.prompt)] = cache.prompt.nbytes
    return (own + sum(prompts.values())) / 2**20


def run(adapter: TransformerAdapter, items: list, method: str, budget: int, seed: int):
    env = TextEnv(adapter, CharTokenizer(), make_task("countdown24").task, width=WIDTH,
                  max_new_tokens=MAX_NEW_TOKENS)  # fmt: skip
    start = time.perf_counter()
    decoded = decode(env, items, method, budget=budget, seed=seed)
    return time.perf_counter() - start, decoded, cached_megabytes(env)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run-dir", default=None, help="a trained TinyLM (default: random)")
    parser.add_argument("--prompts", type=int, default=64, help="training puzzles")
    parser.add_argument("--samples", type=int, default=8, help="sampled completions per puzzle")
    parser.add_argument("--simulations", type=int, default=32, help="MCTS simulations")
    parser.add_argument("--repeats", type=int, default=2, help="runs per mode, interleaved")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for key in ("prompts", "samples", "simulations", "repeats", "threads"):
        if getattr(args, key) < 1:
            parser.error(f"--{key} must be >= 1, got {getattr(args, key)}")
    torch.set_num_threads(args.threads)
    model, source = load_model(args.run_dir, args.seed)
    model.eval()
    adapters = {
        mode: TransformerAdapter(model, eos_id=CharTokenizer().eos_id, use_cache=use_cache)
        for mode, use_cache in zip(MODES, (True, False), strict=True)
    }
    puzzles = make_task("countdown24").train[: args.prompts]
    workloads = {
        f"sample x{args.samples}": ([p for p in puzzles for _ in range(args.samples)], "sample", 1),
        f"mcts-{args.simulations}": (puzzles, "mcts", args.simulations),
    }
    print(
        f"{source}; {len(puzzles)} Countdown-24 training puzzles, width {WIDTH}, <= "
        f"{MAX_NEW_TOKENS} new tokens, {args.threads} torch thread(s), best of {args.repeats}\n"
    )
    header = (
        f"{'workload':<11} {'mode':<10} {'passes':>7} {'seconds':>8} {'passes/s':>9} "
        f"{'speedup':>8} {'cache MB':>9} {'same outputs':>13}"
    )
    print(header + "\n" + "-" * len(header))
    identical = True
    for name, (items, method, budget) in workloads.items():
        runs = {mode: [] for mode in MODES}
        for _ in range(args.repeats):
            for mode, adapter in adapters.items():
                runs[mode].append(run(adapter, items, method, budget, args.seed))
        reference = runs["recompute"][0][1]
        best = {mode: min(r[0] for r in mode_runs) for mode, mode_runs in runs.items()}
        for mode, mode_runs in runs.items():
            decoded = mode_runs[0][1]
            same = all(
                r[1].completions == reference.completions
                and r[1].forward_passes == reference.forward_passes
                for r in mode_runs
            )
            identical &= same
            print(
                f"{name:<11} {mode:<10} {decoded.forward_passes:>7} {best[mode]:>8.2f} "
                f"{decoded.forward_passes / best[mode]:>9.0f} "
                f"{best['recompute'] / best[mode]:>7.1f}x {mode_runs[0][2]:>9.1f} "
                f"{'reference' if mode == 'recompute' else ('yes' if same else 'NO'):>13}"
            )
    if not identical:
        raise SystemExit("the cache and recompute disagree (see above)")


if __name__ == "__main__":
    main()
