"""Our search against mctx itself, in the same process: the peer table of issue 2, re-measured.

The speed targets compare against mctx timings taken once on this machine type, but a shared
2-vCPU VM drifts by 1.5x between days. This benchmark runs mctx 0.0.71 (jitted, with jax's
default CPU settings: set ``XLA_FLAGS`` to change them) and our search on the same table MDP,
taking turns in blocks, so the ratios hold whatever the machine's mood. Ours is timed on numba's
default threads and on one thread (the issue's peers were timed on one core). Each point first
checks that both build the same trees: with the noise off (Dirichlet fraction 0, Gumbel scale 0)
the root visit counts must be equal, so the two are timed on the same work.

Needs the ``peers`` extra (``make bench-mctx`` installs it: jax, jaxlib, mctx; a few hundred MB).

    python -m benchmarks.search_vs_mctx [--points 16x50,256x50] [--budget 2] [--one-core]

``--one-core`` pins the whole process to one CPU first (mctx's XLA threads and ours alike), the
issue's "one core against one core"; without it each uses its defaults.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

import search
from benchmarks.models import TableModel

NUM_ACTIONS = 18
# The peer table: (B, N) at A = 18.
POINTS = ((1, 200), (16, 50), (256, 50), (1024, 200))
POLICIES = ("puct", "gumbel")
# Each turn: a few untimed searches (caches the other left cold), then about this many seconds
# of timed ones (at most 50 searches).
WARM_PER_BLOCK = 3
BLOCK_SECONDS = 0.05


def _import_mctx():
    try:
        import jax
        import jax.numpy as jnp
        import mctx
    except ImportError as error:
        raise SystemExit(
            f"this benchmark needs jax and mctx ({error}); install them with `make bench-mctx` "
            "or `pip install -e '.[peers]'`"
        ) from None
    return jax, jnp, mctx


def noise_settings(policy: str, noise: bool) -> dict:
    """The noise keyword both libraries take: mctx's defaults when on, none when off."""
    if policy == "gumbel":
        return {"gumbel_scale": float(noise)}
    return {"dirichlet_fraction": 0.25 * noise}


class MctxSearch:
    """mctx's policy on a table MDP (anything with the `TableModel` arrays ``next_state``,
    ``reward``, ``discount``, ``prior_logits``, ``value``), jitted once per (policy, B, N,
    noise, mask)."""

    def __init__(self, model):
        self.jax, self.jnp, self.mctx = _import_mctx()
        jnp = self.jnp
        self.tables = {
            name: jnp.asarray(getattr(model, name))
            for name in ("next_state", "reward", "discount", "prior_logits", "value")
        }
        self._compiled = {}

    def _recurrent_fn(self, params, rng_key, action, embedding):
        del params, rng_key
        t = self.tables
        next_state = t["next_state"][embedding, action]
        step = self.mctx.RecurrentFnOutput(
            reward=t["reward"][embedding, action],
            discount=t["discount"][embedding, action],
            prior_logits=t["prior_logits"][next_state],
            value=t["value"][next_state],
        )
        return step, next_state

    def _policy_fn(self, policy: str, num_simulations: int, noise: bool):
        mctx, t = self.mctx, self.tables
        policy_fn = mctx.gumbel_muzero_policy if policy == "gumbel" else mctx.muzero_policy
        noise_kwargs = noise_settings(policy, noise)

        def run(rng_key, root_state, invalid_actions):
            root = mctx.RootFnOutput(
                prior_logits=t["prior_logits"][root_state],
                value=t["value"][root_state],
                embedding=root_state,
            )
            return policy_fn(
                params=(),
                rng_key=rng_key,
                root=root,
                recurrent_fn=self._recurrent_fn,
                num_simulations=num_simulations,
                invalid_actions=invalid_actions,
                **noise_kwargs,
            )

        return run

    def search(self, policy, states, num_simulations, seed, noise=True, invalid_actions=None):
        """mctx's output for root ``states`` ``[B]``; ``invalid_actions`` ``[B, A]`` bool, True =
        invalid (mctx's convention)."""
        key = (policy, num_simulations, noise, invalid_actions is None)
        if key not in self._compiled:
            self._compiled[key] = self.jax.jit(self._policy_fn(policy, num_simulations, noise))
        invalid = None if invalid_actions is None else self.jnp.asarray(invalid_actions)
        out = self._compiled[key](self.jax.random.PRNGKey(seed), self.jnp.asarray(states), invalid)
        out.action.block_until_ready()
        return out


def our_search(
    policy,
    model: search.TabularModel,
    states,
    num_simulations,
    seed,
    noise=True,
    legal_mask=None,
    package=search,
):
    """Our policy with the same noise settings as `MctxSearch` (mctx's defaults when on);
    ``legal_mask`` ``[B, A]`` True = legal (ours). ``package``: the search package to run
    (`benchmarks.search_ab` passes an earlier revision's; ``model`` must be its own)."""
    root = package.RootOutput(model.prior_logits[states], model.value[states], states)
    policy_fn = package.gumbel_muzero_policy if policy == "gumbel" else package.muzero_policy
    return policy_fn(
        root,
        model,
        num_simulations=num_simulations,
        seed=seed,
        legal_mask=legal_mask,
        **noise_settings(policy, noise),
    )


def same_trees(policy, mctx_search, tabular, states, num_simulations) -> bool:
    """Noise off: do mctx and we give every root the same visit counts?"""
    theirs = mctx_search.search(policy, states, num_simulations, 0, noise=False)
    ours = our_search(policy, tabular, states, num_simulations, 0, noise=False)
    their_counts = np.asarray(theirs.search_tree.summary().visit_counts)
    return bool(np.array_equal(their_counts, ours.visit_counts))


def time_point(policy, mctx_search, tabular, states, num_simulations, budget_s):
    """Median seconds per search: mctx, ours on numba's threads, ours on one thread. The three
    take turns in blocks, so drift during the measurement falls on all of them; each block
    starts with untimed searches, so none is timed with caches the other left cold."""
    default_threads = numba.get_num_threads()

    def theirs(seed):
        return mctx_search.search(policy, states, num_simulations, seed)

    def ours(seed):
        return our_search(policy, tabular, states, num_simulations, seed)

    # name -> (search, numba threads while it runs)
    runners = {"mctx": (theirs, default_threads), "ours_1t": (ours, 1)}
    if default_threads > 1:  # pinned to one core, ours on its default threads is ours_1t
        runners["ours"] = (ours, default_threads)
    runs = {name: run for name, (run, _) in runners.items()}
    try:
        return time_interleaved(
            runs, budget_s, lambda name: numba.set_num_threads(runners[name][1])
        )
    finally:
        numba.set_num_threads(default_threads)


def time_interleaved(runs: dict, budget_s: float, before=None) -> tuple[dict[str, float], int]:
    """``({name: median seconds per call}, rounds)`` of ``runs`` (``name -> run(seed)``) taking
    turns in blocks of about ``BLOCK_SECONDS``, each block starting with untimed calls, for at
    least 3 rounds and then until ``budget_s`` (at most 100 rounds); ``before(name)`` runs
    before each of a search's blocks (e.g. to set its threads) and is not timed."""
    before = before or (lambda name: None)
    times = {name: [] for name in runs}
    blocks, warm = {}, {}
    for name, run in runs.items():  # warm-up: compiles jit and entry points
        before(name)
        run(0)
        start = time.perf_counter()
        run(0)
        seconds = time.perf_counter() - start
        blocks[name] = int(np.clip(BLOCK_SECONDS / seconds, 1, 50))
        # A search longer than a block warms the caches by itself.
        warm[name] = WARM_PER_BLOCK if seconds < BLOCK_SECONDS else 0
    deadline = time.perf_counter() + budget_s
    rounds = 0
    while rounds < 3 or (time.perf_counter() < deadline and rounds < 100):
        for name, run in runs.items():
            before(name)
            for _ in range(warm[name]):
                run(0)
            for _ in range(blocks[name]):
                start = time.perf_counter()
                run(len(times[name]) + 1)
                times[name].append(time.perf_counter() - start)
        rounds += 1
    return {name: float(np.median(t)) for name, t in times.items()}, rounds


def pin_to_one_core(cpu: int | None) -> int:
    """Runs this process (and the threads it starts later) on one CPU, numba on one thread;
    returns the CPU (default: the last one this process may use)."""
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[-1] if cpu is None else cpu
    if cpu not in allowed:
        raise SystemExit(
            f"--cpu must be one of the CPUs this process may use, {allowed}; got {cpu}"
        )
    os.sched_setaffinity(0, {cpu})
    numba.set_num_threads(1)
    return cpu


def parse_points(text: str | None):
    if not text:
        return POINTS
    points = []
    for item in text.split(","):
        try:
            batch, sims = (int(x) for x in item.lower().split("x"))
        except ValueError:
            raise SystemExit(f"--points takes BxN items like 16x50,256x50; got {item!r}") from None
        points.append((batch, sims))
    return tuple(points)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", help="comma-separated BxN (default: the issue's four)")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of repeats per point")
    parser.add_argument(
        "--one-core",
        action="store_true",
        help="pin this process (mctx's XLA threads and ours) to one CPU, numba on one thread",
    )
    parser.add_argument("--cpu", type=int, default=None, help="that CPU (default: the last)")
    args = parser.parse_args(argv)
    if args.one_core:  # before jax starts its threads, so that they inherit the one CPU
        print(f"one core: CPU {pin_to_one_core(args.cpu)}, numba threads 1")
    policies = args.policies.split(",")
    for policy in policies:
        if policy not in POLICIES:
            raise SystemExit(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")

    model = TableModel(NUM_ACTIONS)
    tabular = model.tabular()
    mctx_search = MctxSearch(model)
    jax = mctx_search.jax
    print(
        f"mctx {mctx_search.mctx.__version__}, jax {jax.__version__} on {jax.default_backend()} "
        f"(XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}); numba threads: {numba.get_num_threads()}"
    )
    header = (
        f"{'policy':7s} {'B':>5s} {'N':>4s} {'A':>3s} {'same trees':>10s} {'mctx ms':>9s} "
        f"{'ours ms':>8s} {'x mctx':>7s} {'1-thread ms':>11s} {'x mctx':>7s} {'rounds':>6s}"
    )
    print(header)
    print("-" * len(header))
    different = []
    for policy in policies:
        for batch_size, num_simulations in parse_points(args.points):
            states = model.root(batch_size).embedding
            same = same_trees(policy, mctx_search, tabular, states, num_simulations)
            if not same:
                different.append(f"{policy} B={batch_size} N={num_simulations}")
            medians, rounds = time_point(
                policy, mctx_search, tabular, states, num_simulations, args.budget
            )
            medians.setdefault("ours", medians["ours_1t"])
            theirs, ours, ours_1t = (1e3 * medians[k] for k in ("mctx", "ours", "ours_1t"))
            print(
                f"{policy:7s} {batch_size:5d} {num_simulations:4d} {NUM_ACTIONS:3d} "
                f"{'yes' if same else 'NO':>10s} {theirs:9.2f} {ours:8.3f} {theirs / ours:7.1f} "
                f"{ours_1t:11.3f} {theirs / ours_1t:7.1f} {rounds:6d}",
                flush=True,
            )
    if different:
        raise SystemExit(f"mctx and our search built different trees at: {', '.join(different)}")


if __name__ == "__main__":
    main()
