r"""Every LM training method at matched forward passes, over seeds, with paired statistics.

    python -m benchmarks.countdown_methods                         # both tasks, 5 seeds
    python -m benchmarks.countdown_methods --tasks countdown24 --seeds 0,1 --methods distill,sft_verified
    python -m benchmarks.countdown_methods --report                # the table and plot only

Methods (each ``experiment=countdown_<method>``): ``distill`` (search distillation, the
reference budget), ``search_sft`` (SFT on the verified solutions of distillation's search, and
of more distinct searches while the next fits the round's budget: ``llm.search_pass_budget``),
``opd_search`` and ``opd_teacher`` (on-policy distillation, the search or the same seed's
distilled model as teacher), ``sft_verified``, ``grpo``, ``reinforce``. Every
run of a task starts from the same pre-trained TinyLM (``experiment=countdown_pretrain`` on that
task, trained first if ``--run-root`` has none) and runs the same rounds; the rounds' sizes are
``--protocol`` overrides, shared by all (but GRPO and REINFORCE keep 300 updates a round,
``METHOD_PROTOCOL``). Matched compute: distillation's first round sets the
budget of forward passes per round (or ``--budget``), and every other method's samples per
prompt are set so that its first round spends about as much, measured on a calibration subset
of the round's prompts with the pre-trained model at two sample counts (passes grow slower than samples, since samples
share prefixes; fitted as ``a * n ** b``). ``opd_teacher``'s teacher was trained by the
``distill`` run of its seed: that cost is not in its passes.

Each finished run appends one line to ``--results`` (JSONL: task, method, seed, samples per
prompt, the rounds' records), and a re-run skips what is there, so the grid can be filled over
several sessions; a run that was killed resumes from its last round's checkpoint. The report: per task and method, the final greedy test accuracy (mean over
seeds), the passes and completion tokens spent, and the paired difference to SFT on verified
samples with its 95% t interval; the tokens on-policy distillation needs to reach GRPO's final
accuracy; and accuracy against forward passes (PNG).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import torch

from benchmarks.learning_runs import compose_train
from llm_bridge.lm_checkpoint import load_lm
from llm_bridge.tasks.text_tasks import task_from_spec
from llm_bridge.train_text import (
    _round_items,
    build_env,
    opd_teacher,
    round_data,
    task_spec,
    train_text,
)
from mbrl.evaluation.paired import paired_difference
from mbrl.jsonl_log import append_records, read_records
from mbrl.run_dir import check_run_dir

METHODS = (
    "distill",
    "search_sft",
    "opd_search",
    "opd_teacher",
    "sft_verified",
    "grpo",
    "reinforce",
)
REFERENCE, BASELINE = "distill", "sft_verified"
TASKS = {"countdown24": "game=countdown24", "countdown_general": "game=countdown_general"}
# Every training prompt, three rounds of 1,000 updates. (300 prompts and 300 updates, tried
# first, left search distillation at +0.4 points after three rounds: too little to compare.)
PROTOCOL = ["llm.round_steps=1000", "llm.rounds=3"]
# The policy-gradient methods keep their presets' 300 updates: their samples are on-policy only
# for the first pass over them, and GRPO diverged at 2,000 updates a round.
METHOD_PROTOCOL = {"grpo": ["llm.round_steps=300"], "reinforce": ["llm.round_steps=300"]}
CALIBRATION_PROMPTS = 48


def run_key(task: str, method: str, seed: int) -> tuple[str, str, int]:
    return task, method, seed


def load_results(path: Path) -> dict[tuple[str, str, int], dict]:
    rows = read_records(path)
    return {run_key(r["task"], r["method"], r["seed"]): r for r in rows}


def pretrained(task: str, args) -> tuple[str, float]:
    """The task's pre-trained start (trained first if missing) and its greedy test accuracy."""
    run_dir = Path(args.run_root) / f"{task}_pretrain"
    cfg = compose_train(
        "experiment=countdown_pretrain",
        TASKS[task],
        f"run_dir={run_dir}",
        "trainer.progress_bar=false",
        *args.overrides,
    )
    cfg = resumable(cfg)  # another experiment's start (say, a smaller context) is redone
    if cfg.overwrite or not (run_dir / "checkpoints" / "last.ckpt").exists():
        train_text(cfg)
    first = read_records(run_dir / "rounds.jsonl")[0]
    return str(run_dir), first["test_greedy_accuracy"]


def method_config(task: str, method: str, seed: int, start: str, args, *extra: str):
    return compose_train(
        f"experiment=countdown_{method}",
        TASKS[task],
        f"llm.init_from={start}",
        f"seed={seed}",
        f"run_dir={Path(args.run_root) / f'{task}_{method}_s{seed}'}",
        "trainer.progress_bar=false",
        *args.protocol,
        *METHOD_PROTOCOL.get(method, []),
        *args.overrides,
        *extra,
    )


def resumable(cfg):
    """``cfg`` as is where its run directory is empty or holds this very run (a killed run
    resumes), else with ``overwrite=true`` (another experiment's leftovers go)."""
    try:
        check_run_dir(cfg)
        return cfg
    except ValueError:
        return dataclasses.replace(cfg, overwrite=True)


def ensure_teacher(task: str, seed: int, start: str, reference: dict, args) -> None:
    """``opd_teacher`` reads the checkpoint of its seed's recorded ``distill`` run. Where that
    run directory is gone (run directories are not in git), the run is trained again with its
    recorded settings, and its greedy accuracies are checked against the record: a teacher
    that differs is reported, since the student's row then rests on another teacher."""
    run_dir = Path(reference["run_dir"])
    if _rounds_done(run_dir) >= len(reference["rounds"]):
        return
    print(
        f"{task} seed {seed}: the teacher {run_dir} is missing or unfinished; training it "
        "(a killed run resumes from its last round)",
        flush=True,
    )
    cfg = method_config(task, REFERENCE, seed, start, args, f"run_dir={run_dir}")
    summary = train_text(resumable(cfg))
    recorded = [r["test_greedy_accuracy"] for r in reference["rounds"]]
    retrained = [r["test_greedy_accuracy"] for r in summary["rounds"]]
    if len(retrained) != len(recorded):
        raise SystemExit(f"{task} seed {seed}: the teacher stopped early; run again to redo it")
    verdict = "reproduces" if retrained == recorded else "DIFFERS from"
    print(
        f"{task} seed {seed}: the retrained teacher {verdict} its record "
        f"(greedy {', '.join(f'{a:.4f}' for a in retrained)}; recorded "
        f"{', '.join(f'{a:.4f}' for a in recorded)})",
        flush=True,
    )


def _rounds_done(run_dir: Path) -> int:
    """The last round a run directory finished (its checkpoint is that round's), 0 if none."""
    rounds = run_dir / "rounds.jsonl"
    if not (rounds.exists() and (run_dir / "checkpoints" / "last.ckpt").exists()):
        return 0
    return max((record["round"] for record in read_records(rounds)), default=0)


def calibrate(cfg, round_prompts: int) -> dict[int, float]:
    """A round's passes for this method at 2 and 8 samples per prompt, measured with the
    starting model on a calibration subset and scaled to ``round_prompts``."""
    loaded = load_lm(cfg.llm.init_from)
    split = task_from_spec(task_spec(cfg))
    env = build_env(
        loaded.model,
        loaded.tokenizer,
        split.task,
        candidates=cfg.llm.candidates,
        max_new_tokens=cfg.llm.max_new_tokens,
        kv_cache=cfg.llm.kv_cache,
    )
    items = _round_items(split.round_prompts(), CALIBRATION_PROMPTS, 12345, 1)
    teacher = opd_teacher(cfg, loaded.tokenizer)
    measured = {}
    for n in (2, 8):
        cfg.llm.samples_per_prompt = n
        _, stats = round_data(cfg, env, items, 1, loaded.model, teacher=teacher)
        measured[n] = stats["data_passes"] * round_prompts / len(items)
    return measured


def matched_samples(measured: dict[int, float], budget: float) -> int:
    """Samples per prompt whose round costs about ``budget`` passes, on the power law
    ``a * n ** b`` through the two calibration points."""
    exponent = max(0.2, np.log(measured[8] / measured[2]) / np.log(4))
    return max(1, round(2 * (budget / measured[2]) ** (1 / exponent)))


def run_grid(args) -> None:
    results_path = Path(args.results)
    done = load_results(results_path)
    calibrations = {}  # (task, method, teacher) -> passes at 2 and 8 samples: seed-free
    for task in args.tasks:
        start, start_accuracy = pretrained(task, args)
        for method in args.methods:  # every seed of a method first: a partial grid compares
            for seed in args.seeds:
                if run_key(task, method, seed) in done:
                    continue
                reference = done.get(run_key(task, REFERENCE, seed))
                needs_reference = method == "opd_teacher" or (
                    method != REFERENCE and args.budget is None
                )
                if needs_reference and reference is None:
                    raise SystemExit(
                        f"{task} seed {seed}: run {REFERENCE} first (it sets the budget"
                        f"{' and trains the teacher' if method == 'opd_teacher' else ''})"
                    )
                extra = []
                if method == "opd_teacher":
                    ensure_teacher(task, seed, start, reference, args)
                    extra.append(f"llm.opd_teacher={reference['run_dir']}")
                budget = None  # distill sets it
                if method != REFERENCE:
                    budget = args.budget or reference["rounds"][0]["data_passes"]
                if method == "search_sft":  # its searches fill the budget, round after round
                    extra.append(f"llm.search_pass_budget={budget}")
                cfg = method_config(task, method, seed, start, args, *extra)
                if method not in (REFERENCE, "search_sft"):
                    prompts = cfg.llm.round_prompts or len(task_from_spec(task_spec(cfg)).train)
                    key = (task, method, cfg.llm.opd_teacher if method == "opd_teacher" else "")
                    if key not in calibrations:
                        calibrations[key] = calibrate(cfg, prompts)
                    n = matched_samples(calibrations[key], budget)
                    measured = ", ".join(f"{k}: {v:.0f}" for k, v in calibrations[key].items())
                    print(
                        f"{task} {method}: {n} samples per prompt (passes per round at "
                        f"samples {measured}; budget {budget})",
                        flush=True,
                    )
                    cfg = method_config(
                        task, method, seed, start, args, *extra, f"llm.samples_per_prompt={n}"
                    )
                print(f"{task} {method} seed {seed}", flush=True)
                summary = train_text(resumable(cfg))
                if len(summary["rounds"]) != cfg.llm.rounds:  # stopped early (Ctrl-C, SIGTERM)
                    raise SystemExit(
                        f"{task} {method} seed {seed} stopped after {len(summary['rounds'])} of "
                        f"{cfg.llm.rounds} rounds: not recorded; run again to redo it"
                    )
                row = {
                    "task": task,
                    "method": method,
                    "seed": seed,
                    "samples_per_prompt": cfg.llm.samples_per_prompt,
                    "budget": budget,  # a round's passes matched (None: distill sets it)
                    "run_dir": summary["run_dir"],
                    "start_accuracy": start_accuracy,
                    # The start (and every run) differs between torch's CPU kernels (AVX-512
                    # or AVX2 round differently): rows pair only within one.
                    "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                    "rounds": summary["rounds"],  # rounds 1, 2, ... (round 0 is the start)
                }
                append_records(results_path, [row])
                done[run_key(task, method, seed)] = row


def report(args) -> None:
    done = load_results(Path(args.results))
    for task in args.tasks:
        runs = {
            m: {s: r for (t, mm, s), r in done.items() if t == task and mm == m} for m in METHODS
        }
        if not any(runs.values()):
            continue
        print(f"\n{task}")
        starts = sorted(
            {r["start_accuracy"] for by_seed in runs.values() for r in by_seed.values()}
        )
        if len(starts) > 1:
            print(
                f"  WARNING: rows from different starts ({', '.join(f'{a:.4f}' for a in starts)}): "
                "pairs across starts are not comparable; keep one start per results file"
            )
        header = (
            f"{'method':>13} {'seeds':>5} {'start':>6} {'final':>6} {'passes':>9} "
            f"{'tokens':>10}  vs {BASELINE} (paired, 95%)"
        )
        print(header + "\n" + "-" * len(header))
        for method, by_seed in runs.items():
            if by_seed:
                print(_report_row(method, by_seed, runs[BASELINE]))
        print(
            _tokens_to_match(runs.get("opd_search", {}), runs.get("opd_teacher", {}), runs["grpo"])
        )
    if args.plot:
        _plot(done, args.tasks, args.plot)


def _final(row: dict) -> float:
    return row["rounds"][-1]["test_greedy_accuracy"]


def _report_row(method: str, by_seed: dict, baseline: dict) -> str:
    rows = list(by_seed.values())
    start = np.mean([r["start_accuracy"] for r in rows])
    final = np.mean([_final(r) for r in rows])
    passes = np.mean([sum(x["data_passes"] for x in r["rounds"]) for r in rows])
    tokens = np.mean([sum(x.get("completion_tokens", 0) for x in r["rounds"]) for r in rows])
    line = f"{method:>13} {len(rows):>5} {start:>6.3f} {final:>6.3f} {passes:>9.0f} {tokens:>10.0f}"
    shared = sorted(set(by_seed) & set(baseline))
    if method != BASELINE and shared:
        mean, low, high = paired_difference(
            [_final(by_seed[s]) for s in shared], [_final(baseline[s]) for s in shared]
        )
        wins = sum(_final(by_seed[s]) > _final(baseline[s]) for s in shared)
        line += f"  {mean:+.3f} [{low:+.3f}, {high:+.3f}], ahead on {wins}/{len(shared)}"
    return line


def _tokens_to_match(*runs: dict) -> str:
    """Completion tokens each on-policy distillation needed to reach GRPO's final accuracy."""
    *students, grpo = runs
    if not grpo:
        return "  (no GRPO runs: no token comparison)"
    target = np.mean([_final(r) for r in grpo.values()])
    grpo_tokens = np.mean(
        [sum(x.get("completion_tokens", 0) for x in r["rounds"]) for r in grpo.values()]
    )
    lines = []
    for name, student in zip(("opd_search", "opd_teacher"), students, strict=True):
        if not student:
            continue
        curves = [r["rounds"] for r in student.values()]
        spent = 0.0
        for k in range(min(len(c) for c in curves)):
            spent += np.mean([c[k].get("completion_tokens", 0) for c in curves])
            if np.mean([c[k]["test_greedy_accuracy"] for c in curves]) >= target:
                lines.append(
                    f"  {name} reaches GRPO's final {target:.3f} after {spent:.0f} completion "
                    f"tokens, {spent / max(1.0, grpo_tokens):.2f}x GRPO's {grpo_tokens:.0f}"
                )
                break
        else:
            lines.append(f"  {name} does not reach GRPO's final {target:.3f}")
    return "\n".join(lines)


def _plot(done: dict, tasks: list[str], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in tasks if any(key[0] == t for key in done)]  # a panel per measured task
    if not tasks:
        return
    figure, axes = plt.subplots(1, len(tasks), figsize=(6 * len(tasks), 4.5), squeeze=False)
    for axis, task in zip(axes[0], tasks, strict=True):
        for method in METHODS:
            rows = [r for (t, m, _), r in done.items() if t == task and m == method]
            if not rows:
                continue
            length = min(len(r["rounds"]) for r in rows)
            passes = np.mean(
                [[0, *np.cumsum([x["data_passes"] for x in r["rounds"][:length]])] for r in rows],
                axis=0,
            )
            accuracy = np.mean(
                [
                    [
                        r["start_accuracy"],
                        *(x["test_greedy_accuracy"] for x in r["rounds"][:length]),
                    ]
                    for r in rows
                ],
                axis=0,
            )
            axis.plot(passes, accuracy, marker="o", label=f"{method} ({len(rows)} seeds)")
        axis.set(title=task, xlabel="forward passes on data (cumulative)", ylabel="test accuracy")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"\nplot: {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )

    def names(choices):
        def parse(text: str) -> list[str]:
            chosen = text.split(",")
            bad = sorted(set(chosen) - set(choices))
            if bad:
                raise argparse.ArgumentTypeError(f"unknown {bad}; choose from {list(choices)}")
            return chosen

        return parse

    parser.add_argument("--tasks", type=names(TASKS), default=list(TASKS))
    parser.add_argument("--methods", type=names(METHODS), default=list(METHODS))
    parser.add_argument(
        "--seeds", type=lambda t: [int(x) for x in t.split(",")], default=[0, 1, 2, 3, 4]
    )
    parser.add_argument("--results", default="benchmarks/results/countdown_methods.jsonl")
    parser.add_argument("--run-root", default="runs/bench_methods")
    parser.add_argument("--plot", default="benchmarks/results/countdown_methods.png")

    def positive(text: str) -> int:
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"must be a whole number of passes >= 1, got {text!r}")
        return int(text)

    parser.add_argument(
        "--budget",
        type=positive,
        help="forward passes of a round to match (default: the same seed's distill run's "
        "first round); lets a grid on another start run without distill",
    )
    parser.add_argument("--report", action="store_true", help="only print the table and plot")
    parser.add_argument(
        "--protocol",
        nargs="*",
        default=PROTOCOL,
        help="overrides every run shares (the rounds' sizes)",
    )
    args, args.overrides = parser.parse_known_args(argv)
    if not args.report:
        run_grid(args)
    report(args)


if __name__ == "__main__":
    main()
