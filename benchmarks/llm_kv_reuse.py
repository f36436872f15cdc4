"""KV-cache reuse in `HFAdapter`: search decoding with ``use_cache=True`` against
``use_cache=False`` (every sequence recomputed), timed in the same process on the same puzzles.

    python -m benchmarks.llm_kv_reuse --threads 1               # B=8 puzzles, 16 simulations
    python -m benchmarks.llm_kv_reuse --threads 1 --quick       # B=4, 4 simulations, 1 repeat
    python -m benchmarks.llm_kv_reuse --threads 1 --synthetic   # + the synthetic tree table

The model is a randomly initialised GPT-2 (4 layers, 256 wide, 4 heads, vocabulary 512, context
512, ``<bos>``/``<eos>`` ids 1/2) with a value head, saved to a temporary directory and loaded
twice through ``HFAdapter.from_directory`` (once per mode). It reads `CharTokenizer` ids directly
(23 ids < 512; Countdown's grammar keeps every candidate a character id).

Main table: real search decoding. ``decode(env, puzzles, method, budget=S)`` with ``method``
``mcts`` and ``gumbel`` on B Countdown-24 test puzzles whose prompts carry 8 worked examples
(`CountdownTask(few_shot=8)`, ~290 characters: a long prefix every node of a tree shares). Modes
run interleaved (a busy machine slows both alike); the fastest of ``--repeats`` counts. The
search is deterministic given the logits, so both modes must give the same completions (token
ids) and the same forward-pass counts; the logits of every state both modes evaluated are
compared too (cached and recomputed attention sum in different orders: ~1e-6 apart).

Second table (``--synthetic``): the search's call pattern without the search. B random prompts;
every round picks a seeded random node per tree and extends it by one top-k token (one
``extend`` of B rows a round). ``start`` (the prefill) costs the same in both modes, so
``extend speedup`` is the reuse itself and ``speedup`` the whole workload's.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import NamedTuple

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging as hf_logging

from llm_bridge.decoding import Decoded, decode
from llm_bridge.hf_adapter import HFAdapter
from llm_bridge.tasks.text_tasks import CountdownTask, make_task
from llm_bridge.text_env import TextEnv
from llm_bridge.tokenizer import CharTokenizer

MODEL = {"n_layer": 4, "n_embd": 256, "n_head": 4, "vocab_size": 512, "n_positions": 512}
MODES = ("kv reuse", "recompute")  # use_cache True / False
METHODS = ("mcts", "gumbel")
WIDTH, MAX_NEW_TOKENS, FEW_SHOT = 8, 40, 8


def save_random_gpt2(directory: str, seed: int) -> None:
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(**MODEL, eos_token_id=2, bos_token_id=1))
    value_head = torch.nn.Linear(MODEL["n_embd"], 1)
    HFAdapter(model, value_head=value_head).save(directory)


def load_adapters(directory: str) -> dict[str, HFAdapter]:
    """Both modes load the same weights and value head from the same directory."""
    return {
        mode: HFAdapter.from_directory(directory, use_cache=use_cache)
        for mode, use_cache in zip(MODES, (True, False), strict=True)
    }


# -- search decoding ---------------------------------------------------------------------------


class SearchRun(NamedTuple):
    """One ``decode`` call: its wall time, its result and the logits of every state it
    evaluated, by token ids."""

    seconds: float
    decoded: Decoded
    logits: dict[tuple[int, ...], torch.Tensor]


def _recording(adapter: HFAdapter, logits: dict):
    """``adapter`` as `TextEnv` sees it, but ``start``/``extend`` also file each row's logits
    in ``logits`` (a dict write per row: nothing next to a forward pass)."""

    class Recorder:
        def __getattr__(self, name):  # forward_passes and the rest: the adapter's own
            return getattr(adapter, name)

        def _file(self, states, output):
            logits.update(zip((s.ids for s in states), output.logits, strict=True))
            return states, output

        def start(self, prompts):
            return self._file(*adapter.start(prompts))

        def extend(self, parents, tokens):
            return self._file(*adapter.extend(parents, tokens))

    return Recorder()


def run_search(
    adapter: HFAdapter, task: CountdownTask, items: list, method: str, simulations: int
) -> SearchRun:
    logits: dict[tuple[int, ...], torch.Tensor] = {}
    env = TextEnv(
        _recording(adapter, logits),
        CharTokenizer(),
        task,
        width=WIDTH,
        max_new_tokens=MAX_NEW_TOKENS,
    )
    start = time.perf_counter()
    decoded = decode(env, items, method, budget=simulations, seed=0)
    return SearchRun(time.perf_counter() - start, decoded, logits)


def same_outputs(run: SearchRun, reference: SearchRun) -> bool:
    """Same completions, token ids (so the same chosen tokens) and forward passes."""
    ours, theirs = run.decoded, reference.decoded
    return (
        ours.completions == theirs.completions
        and ours.ids == theirs.ids
        and ours.forward_passes == theirs.forward_passes
    )


def logits_gap(run: SearchRun, reference: SearchRun) -> tuple[float, int, bool]:
    """Max |logits difference| over the states both runs evaluated, how many there were, and
    whether both evaluated exactly the same states (the same search trees)."""
    common = run.logits.keys() & reference.logits.keys()
    gap = max(((run.logits[k] - reference.logits[k]).abs().max().item() for k in common), default=0)
    return gap, len(common), run.logits.keys() == reference.logits.keys()


def search_table(adapters: dict[str, HFAdapter], args) -> bool:
    split = make_task("countdown24")
    task = CountdownTask(grammar=True, few_shot=FEW_SHOT)
    items = split.test[: args.batch]
    prompt_tokens = [len(task.prompt(item)) + 1 for item in items]  # + <bos>
    for adapter in adapters.values():  # warm-up: first-call allocations, kernel selection
        run_search(adapter, task, items[:1], METHODS[0], 2)
    print(
        f"Search decoding: B={len(items)} Countdown-24 test puzzles, {FEW_SHOT}-shot prompts of "
        f"{min(prompt_tokens)}-{max(prompt_tokens)} tokens, {args.simulations} simulations per "
        f"decision, width {WIDTH}, <= {MAX_NEW_TOKENS} new tokens; GPT-2 {MODEL['n_layer']}x"
        f"{MODEL['n_embd']}, {torch.get_num_threads()} threads, best of {args.repeats}\n"
    )
    print(
        f"{'method':<7} {'mode':<10} {'forward passes':>14} {'seconds':>8} {'passes/s':>9} "
        f"{'speedup':>8} {'outputs identical':>18}"
    )
    all_same, notes = True, []
    for method in METHODS:
        runs = {mode: [] for mode in adapters}
        for _ in range(args.repeats):  # interleaved, so a busy machine slows both modes alike
            for mode, adapter in adapters.items():
                runs[mode].append(run_search(adapter, task, items, method, args.simulations))
        reference = runs["recompute"][0]
        best = {mode: min(r.seconds for r in mode_runs) for mode, mode_runs in runs.items()}
        for mode, mode_runs in runs.items():
            same = all(same_outputs(run, reference) for run in mode_runs)
            all_same &= same
            passes = mode_runs[0].decoded.forward_passes
            verdict = "reference" if mode == "recompute" else ("yes" if same else "NO")
            print(
                f"{method:<7} {mode:<10} {passes:>14} {best[mode]:>8.2f} "
                f"{passes / best[mode]:>9.1f} {best['recompute'] / best[mode]:>7.1f}x "
                f"{verdict:>18}"
            )
        gap, states, same_states = logits_gap(runs["kv reuse"][0], reference)
        solved = int((reference.decoded.rewards > 0).sum())
        notes.append(
            f"{method}: max |logits difference| {gap:.2e} over the {states} states both modes "
            f"evaluated ({'the same' if same_states else 'DIFFERENT'} state sets); "
            f"solved {solved}/{len(items)}"
        )
    print("\n" + "\n".join(notes))
    return all_same


# -- synthetic tree growth ---------------------------------------------------------------------


class TreeRun(NamedTuple):
    """One workload: seconds in ``start`` and in the ``extend`` rounds, the forward passes
    counted, the chosen tokens ``[S][B]`` and every node's logits ``[S + 1, B, V]``."""

    start_seconds: float
    extend_seconds: float
    forward_passes: int
    chosen: list[list[int]]
    logits: torch.Tensor


def grow_trees(
    adapter: HFAdapter, prompts: list[list[int]], rounds: int, top_k: int, seed: int
) -> TreeRun:
    """The tree search's call pattern: one ``start``, then one ``extend`` of B rows a round."""
    rng = np.random.default_rng(seed)
    passes_before = adapter.forward_passes
    start_time = time.perf_counter()
    states, output = adapter.start(prompts)
    extend_time = time.perf_counter()
    trees = [[(state, logits)] for state, logits in zip(states, output.logits, strict=True)]
    all_logits, chosen = [output.logits], []
    for _ in range(rounds):
        parents, tokens = [], []
        for nodes in trees:
            state, logits = nodes[rng.integers(len(nodes))]
            rank = rng.integers(top_k)
            parents.append(state)
            tokens.append([int(torch.topk(logits, top_k).indices[rank])])
        children, output = adapter.extend(parents, tokens)
        for nodes, child, logits in zip(trees, children, output.logits, strict=True):
            nodes.append((child, logits))
        all_logits.append(output.logits)
        chosen.append([new[0] for new in tokens])
    end_time = time.perf_counter()
    for nodes in trees:
        adapter.release(state for state, _ in nodes)
    return TreeRun(
        extend_time - start_time,
        end_time - extend_time,
        adapter.forward_passes - passes_before,
        chosen,
        torch.stack(all_logits),
    )


def synthetic_table(adapters: dict[str, HFAdapter], args) -> bool:
    rng = np.random.default_rng(args.seed)
    high = int(args.prompt_length * 1.5)
    prompts = [
        rng.integers(3, MODEL["vocab_size"], rng.integers(args.prompt_length, high + 1)).tolist()
        for _ in range(args.batch)
    ]
    for adapter in adapters.values():  # warm-up
        grow_trees(adapter, prompts[:2], 2, args.top_k, args.seed)
    runs = {mode: [] for mode in adapters}
    for _ in range(args.repeats):
        for mode, adapter in adapters.items():
            runs[mode].append(grow_trees(adapter, prompts, args.rounds, args.top_k, args.seed))
    best = {
        mode: min(mode_runs, key=lambda run: run.start_seconds + run.extend_seconds)
        for mode, mode_runs in runs.items()
    }
    baseline = best["recompute"]
    print(
        f"\nSynthetic trees: B={args.batch} random prompts of {args.prompt_length}-{high} tokens, "
        f"{args.rounds} rounds, top-{args.top_k}, best of {args.repeats}\n"
    )
    print(
        f"{'mode':<10} {'forward passes':>14} {'start s':>8} {'extend s':>9} {'total s':>8} "
        f"{'passes/s':>9} {'speedup':>8} {'extend speedup':>15}"
    )
    for mode, run in best.items():
        total = run.start_seconds + run.extend_seconds
        speedup = (baseline.start_seconds + baseline.extend_seconds) / total
        print(
            f"{mode:<10} {run.forward_passes:>14} {run.start_seconds:>8.2f} "
            f"{run.extend_seconds:>9.2f} {total:>8.2f} {run.forward_passes / total:>9.1f} "
            f"{speedup:>7.1f}x {baseline.extend_seconds / run.extend_seconds:>14.1f}x"
        )
    cached_runs = runs["kv reuse"]
    same = all(run.chosen == baseline.chosen for run in cached_runs)
    difference = max((run.logits - baseline.logits).abs().max().item() for run in cached_runs)
    print(f"\nchosen tokens identical: {same}; max |logits difference|: {difference:.2e}")
    return same


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=8, help="puzzles (trees) searched together")
    parser.add_argument(
        "--simulations", type=int, default=16, help="search simulations per decision (S)"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs per mode, interleaved; the fastest counts"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default torch's)")
    parser.add_argument("--seed", type=int, default=0, help="the model's weights")
    parser.add_argument(
        "--quick", action="store_true", help="CI size: B=4, 4 simulations (16 rounds), 1 repeat"
    )
    synthetic = parser.add_argument_group("synthetic trees (second table)")
    synthetic.add_argument("--synthetic", action="store_true", help="also run this table")
    synthetic.add_argument("--rounds", type=int, default=64, help="extend rounds per tree")
    synthetic.add_argument(
        "--prompt-length", type=int, default=128, help="prompts are 1 to 1.5 times this long"
    )
    synthetic.add_argument("--top-k", type=int, default=4, help="tokens drawn from the top k")
    args = parser.parse_args()
    if args.quick:
        args.batch, args.simulations, args.rounds, args.repeats = 4, 4, 16, 1
    if int(args.prompt_length * 1.5) + args.rounds > MODEL["n_positions"]:
        parser.error(f"synthetic prompts + {args.rounds} rounds exceed {MODEL['n_positions']}")
    hf_logging.disable_progress_bar()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as directory:
        save_random_gpt2(directory, args.seed)
        adapters = load_adapters(directory)
    identical = search_table(adapters, args)
    if args.synthetic:
        identical &= synthetic_table(adapters, args)
    if not identical:
        raise SystemExit("kv reuse and recompute disagree (see above)")


if __name__ == "__main__":
    main()
