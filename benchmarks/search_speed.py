"""Speed of the batched search: ms per search and simulations/s, against the pure-Python
reference (``tests/search/reference.py``) measured in the same run, plus numba compile times.

    python -m benchmarks.search_speed            # the grid of issue #2 (tens of minutes)
    python -m benchmarks.search_speed --quick    # the four peer points only (about a minute)

Policies: ``puct`` (mctx semantics), ``puct-ez`` (EfficientZero/LightZero's tree-wide min-max
with parent-mean Q for unvisited children: shallow trees, compare with LightZero), ``gumbel``
(Gumbel MuZero, m=16). Models: ``tabular`` (a table MDP looked up inside the kernels: the tree alone, as
mctx jits its table models), ``table`` (the same MDP as a Python ``recurrent_fn`` doing numpy
gathers: adds the per-simulation Python round trip) and ``mlp`` (a small torch MLP: search
overhead next to a small network) and ``conv`` (EfficientZero's Atari-sized latent ResNet, at the
B=16 and B=256 points only: the share of a self-play step that the search itself costs). The reference is timed on at most
``--reference-roots`` roots and scaled by B (its roots are independent).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

import search
import search.search
from benchmarks.models import ConvModel, MLPModel, TableModel

PEER_MS = {  # issue #2, measured by the issue's author on this machine type (one core, table model)
    (1, 200, 18): {"puct": 11.8, "gumbel": 2.1, "puct-ez": 14.0},
    (16, 50, 18): {"puct": 13.4, "gumbel": 1.7, "puct-ez": 5.8},
    (256, 50, 18): {"puct": 159.0, "gumbel": 26.0, "puct-ez": 60.0},
    (1024, 200, 18): {"puct": 25600.0, "gumbel": 5900.0, "puct-ez": 2200.0},
}
PEER_NAME = {"puct": "mctx PUCT", "gumbel": "mctx Gumbel", "puct-ez": "LightZero"}
MAX_TREE_BYTES = 2 << 30
NETWORKS = {"mlp": MLPModel, "conv": ConvModel}
CONV_POINTS = ((16, 50), (256, 50))


def policy_call(policy: str):
    if policy == "gumbel":
        return search.gumbel_muzero_policy, {}
    if policy == "puct-ez":
        return search.muzero_policy, {"qtransform": search.qtransform_tree_min_max()}
    return search.muzero_policy, {}


def time_search(
    policy: str, model, batch_size: int, num_simulations: int, budget_s: float, fused: bool
):
    """Median ms per search over repeats filling ``budget_s``; also model ms and mean depth."""
    fn, kwargs = policy_call(policy)
    root = model.root(batch_size)
    if fused:
        tabular = model.tabular()
        model = lambda *_: None  # noqa: E731 - never called: the fused search ignores it
        fn_fused = fn
        fn = lambda root, _model, **kw: fn_fused(root, tabular, **kw)  # noqa: E731
    model_seconds = [0.0]

    def timed_model(*args):
        start = time.perf_counter()
        result = model(*args)
        model_seconds[0] += time.perf_counter() - start
        return result

    out = fn(root, timed_model, num_simulations=num_simulations, seed=0, **kwargs)  # warm-up
    times, model_times = [], []
    deadline = time.perf_counter() + budget_s
    while len(times) < 3 or (time.perf_counter() < deadline and len(times) < 50):
        model_seconds[0] = 0.0
        start = time.perf_counter()
        out = fn(root, timed_model, num_simulations=num_simulations, seed=len(times), **kwargs)
        times.append(time.perf_counter() - start)
        model_times.append(model_seconds[0])
    order = np.argsort(times)[len(times) // 2]
    return 1e3 * times[order], 1e3 * model_times[order], float(search.tree_depths(out.tree).mean())


def time_reference(
    policy: str, model: TableModel, batch_size: int, num_simulations: int, roots: int
):
    """ms for B roots by the pure-Python reference, timed on ``roots`` of them and scaled."""
    from tests.search import reference

    root = model.root(batch_size)
    count = min(roots, batch_size)
    ref_model = model.reference_model()
    start = time.perf_counter()
    for b in range(count):
        args = (ref_model, root.prior_logits[b], float(root.value[b]), int(root.embedding[b]))
        if policy == "gumbel":
            reference.run_gumbel(
                *args, num_simulations=num_simulations, gumbel=np.zeros(model.prior_logits.shape[1])
            )
        else:
            qtransform = reference.TreeMinMax() if policy == "puct-ez" else None
            reference.run_muzero(*args, num_simulations=num_simulations, qtransform=qtransform)
    return 1e3 * (time.perf_counter() - start) * batch_size / count


def compile_times() -> tuple[float, float]:
    """Seconds for import + first small search of every policy: cold cache, then cached."""
    code = (
        "import time; t=time.perf_counter(); import search; from benchmarks.models import TableModel; "
        "m=TableModel(4, num_states=16); r=m.root(2); "
        "search.muzero_policy(r, m, num_simulations=4); "
        "search.muzero_policy(r, m, num_simulations=4, qtransform=search.qtransform_tree_min_max()); "
        "search.gumbel_muzero_policy(r, m, num_simulations=4); print(time.perf_counter()-t)"
    )
    results = []
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
        for _ in range(2):
            output = subprocess.run(
                [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
            )
            results.append(float(output.stdout.strip().splitlines()[-1]))
    return results[0], results[1]


def grid(quick: bool):
    if quick:
        return [(1, 200, 18), (16, 50, 18), (256, 50, 18), (1024, 200, 18)]
    points = []
    for batch_size in (1, 16, 256, 1024):
        for num_simulations in (16, 50, 200, 800):
            for num_actions in (4, 18, 64, 362):
                tree_bytes = batch_size * (num_simulations + 1) * num_actions * 29
                if tree_bytes > MAX_TREE_BYTES or batch_size * num_simulations > 300_000:
                    continue  # more memory or time than a 2-core, 24 GiB machine should spend
                points.append((batch_size, num_simulations, num_actions))
    return points


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="only the four points of the peers' table"
    )
    parser.add_argument("--policies", default="puct,puct-ez,gumbel")
    parser.add_argument("--models", default="tabular,table,mlp,conv")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of repeats per point")
    parser.add_argument("--reference-roots", type=int, default=4)
    parser.add_argument(
        "--reference-max-sims", type=int, default=20_000, help="skip the reference above B*N"
    )
    parser.add_argument("--no-compile-times", action="store_true")
    args = parser.parse_args(argv)

    print(
        f"numba threads: {numba.get_num_threads()}, parallel kernels from B >= "
        f"{search.search.PARALLEL_MIN_BATCH}"
    )
    header = (
        f"{'policy':8} {'model':7} {'B':>5} {'N':>4} {'A':>4} {'ms/search':>10} {'sims/s':>10} "
        f"{'depth':>6} {'model %':>8} {'ref ms':>9} {'x ref':>7} {'peer':>12} {'peer ms':>8} {'x peer':>7}"
    )
    print(header)
    print("-" * len(header))
    for model_name in args.models.split(","):
        for batch_size, num_simulations, num_actions in grid(args.quick):
            if model_name == "mlp" and num_actions > 64 and not args.quick:
                continue
            if model_name == "conv" and (
                (batch_size, num_simulations) not in CONV_POINTS or num_actions != 18
            ):
                continue
            model = NETWORKS.get(model_name, TableModel)(num_actions)
            for policy in args.policies.split(","):
                fused = model_name == "tabular"
                ms, model_ms, depth = time_search(
                    policy, model, batch_size, num_simulations, args.budget, fused
                )
                sims_per_s = batch_size * num_simulations / (ms / 1e3)
                ref = ""
                if model_name not in NETWORKS and args.reference_roots > 0:
                    ref_ms = time_reference(
                        policy, model, batch_size, num_simulations, args.reference_roots
                    )
                    ref = f"{ref_ms:9.1f} {ref_ms / ms:7.1f}"
                else:
                    ref = f"{'-':>9} {'-':>7}"
                peer = PEER_MS.get((batch_size, num_simulations, num_actions), {}).get(policy)
                peer_cols = (
                    f"{PEER_NAME[policy]:>12} {peer:8.1f} {peer / ms:7.1f}"
                    if peer and model_name not in NETWORKS
                    else f"{'':>12} {'':>8} {'':>7}"
                )
                print(
                    f"{policy:8} {model_name:7} {batch_size:5d} {num_simulations:4d} {num_actions:4d} {ms:10.2f} "
                    f"{sims_per_s:10.0f} {depth:6.1f} {100 * model_ms / ms:7.0f}% {ref} {peer_cols}",
                    flush=True,
                )
    if not args.no_compile_times:
        cold, cached = compile_times()
        print(
            f"\nnumba compile (import + first search of each policy): cold {cold:.1f} s, cached {cached:.1f} s"
        )


if __name__ == "__main__":
    main()
