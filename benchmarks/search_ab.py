"""The search against an earlier revision of itself, in one process: the A/B for speed work.

    python -m benchmarks.search_ab --base HEAD~1                 # Gumbel at B = 16 and 256, N = 50
    python -m benchmarks.search_ab --base main --policies puct,gumbel --points 1x200,16x50 --one-core

A shared 2-vCPU machine drifts by 10% and more between runs, and the same code timed in two
processes one after the other differs by as much, so a change worth a few percent cannot be read
from two runs. This benchmark exports ``search/`` at ``--base`` (``git archive``) into a package
named ``search_base`` (its imports rewritten to point at itself), checks on the table MDP that
both build the same trees (noise off: equal root visit counts), and times the two in alternating
blocks in the same process (`benchmarks.search_vs_mctx.time_interleaved`). The ratio
``this tree / base`` is what the change bought: below 1 is faster. The export lives under
``runs/search_ab/<commit>``, so numba's cache makes a second run against the same base quick.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import re
import shutil
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import numba
import numpy as np

import search
from benchmarks.models import TableModel
from benchmarks.search_vs_mctx import (
    NUM_ACTIONS,
    our_search,
    parse_points,
    pin_to_one_core,
    time_interleaved,
)

BASE_PACKAGE = "search_base"
POLICIES = ("puct", "gumbel")
DEFAULT_POINTS = "16x50,256x50"
_REPOSITORY = Path(__file__).resolve().parent.parent
# ``from search import x``, ``from search.kernels import y``, ``import search``: the package's
# own imports, which must reach the exported copy, not this tree's.
_FROM_SEARCH = re.compile(r"\bfrom search(?=[.\s])")
_IMPORT_SEARCH = re.compile(r"^(\s*)import search\b(?!_)", re.MULTILINE)


def resolve(revision: str) -> str:
    """The full commit id of ``revision``, or a one-line error naming it."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
        cwd=_REPOSITORY,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise SystemExit(f"--base {revision!r} is not a commit of {_REPOSITORY}")
    return found.stdout.strip()


def export_base(commit: str, root: Path) -> Path:
    """``search/`` at ``commit`` as the package ``root/<commit>/search_base`` (kept for numba's
    cache); returns the directory to put on ``sys.path``."""
    home = root / commit
    package = home / BASE_PACKAGE
    if (package / "__init__.py").exists():
        return home
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, "search"],
        cwd=_REPOSITORY,
        capture_output=True,
        check=True,
    ).stdout
    staging = home / "staging"
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(staging, filter="data")
    for source in (staging / "search").rglob("*.py"):
        text = _FROM_SEARCH.sub(f"from {BASE_PACKAGE}", source.read_text())
        source.write_text(_IMPORT_SEARCH.sub(rf"\1import {BASE_PACKAGE} as search", text))
    (staging / "search").rename(package)  # last: a half-written export is never reused
    shutil.rmtree(staging)
    return home


def import_base(home: Path):
    """The exported package, imported from ``home`` (which goes first on ``sys.path``)."""
    sys.path.insert(0, str(home))
    module = importlib.import_module(BASE_PACKAGE)
    if Path(module.__file__).resolve().parent != (home / BASE_PACKAGE).resolve():
        raise SystemExit(f"{BASE_PACKAGE} was imported from {module.__file__}, not from {home}")
    return module


class Variant(NamedTuple):
    """One revision's search package and the shared table MDP as that package's model."""

    package: ModuleType
    tabular: tuple

    @classmethod
    def of(cls, package: ModuleType, model: TableModel) -> Variant:
        arrays = (model.next_state, model.reward, model.discount, model.prior_logits, model.value)
        return cls(package, package.tabular_model(*arrays))

    def search(self, policy: str, states, num_simulations: int, seed: int, noise: bool = True):
        return our_search(
            policy, self.tabular, states, num_simulations, seed, noise, package=self.package
        )


def same_trees(policy, variants: dict, states, num_simulations, seeds=range(3)) -> bool:
    """Equal root visit counts with the noise off, and with the noise on for a few seeds."""
    base, this = variants["base"], variants["this"]
    runs = [(0, False), *((seed, True) for seed in seeds)]
    return all(
        np.array_equal(
            base.search(policy, states, num_simulations, seed, noise).visit_counts,
            this.search(policy, states, num_simulations, seed, noise).visit_counts,
        )
        for seed, noise in runs
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base", required=True, help="the git revision to compare against")
    parser.add_argument("--points", default=DEFAULT_POINTS, help="comma-separated BxN items")
    parser.add_argument("--policies", default="gumbel", help="puct, gumbel or both")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of repeats per point")
    parser.add_argument("--export-root", default=str(_REPOSITORY / "runs" / "search_ab"))
    parser.add_argument(
        "--one-core", action="store_true", help="pin the process to one CPU, numba on one thread"
    )
    parser.add_argument("--cpu", type=int, default=None, help="that CPU (default: the last)")
    args = parser.parse_args(argv)
    policies = args.policies.split(",")
    for policy in policies:
        if policy not in POLICIES:
            raise SystemExit(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
    points = parse_points(args.points)
    if args.one_core:
        print(f"one core: CPU {pin_to_one_core(args.cpu)}, numba threads 1")
    commit = resolve(args.base)
    model = TableModel(NUM_ACTIONS)
    variants = {
        "base": Variant.of(import_base(export_base(commit, Path(args.export_root))), model),
        "this": Variant.of(search, model),
    }
    print(
        f"base: {args.base} ({commit[:10]}); this: the working tree; numba threads "
        f"{numba.get_num_threads()}; ratio < 1: this tree is faster"
    )
    header = (
        f"{'policy':7s} {'B':>5s} {'N':>4s} {'same trees':>10s} {'base ms':>9s} "
        f"{'this ms':>9s} {'this/base':>9s} {'rounds':>6s}"
    )
    print(header + "\n" + "-" * len(header))
    different = []
    for policy in policies:
        for batch_size, num_simulations in points:
            states = model.root(batch_size).embedding
            same = same_trees(policy, variants, states, num_simulations)
            if not same:
                different.append(f"{policy} B={batch_size} N={num_simulations}")
            runs = {  # name -> run(seed)
                name: functools.partial(variant.search, policy, states, num_simulations)
                for name, variant in variants.items()
            }
            medians, rounds = time_interleaved(runs, args.budget)
            base_ms, this_ms = 1e3 * medians["base"], 1e3 * medians["this"]
            print(
                f"{policy:7s} {batch_size:5d} {num_simulations:4d} {'yes' if same else 'NO':>10s} "
                f"{base_ms:9.3f} {this_ms:9.3f} {this_ms / base_ms:9.3f} {rounds:6d}",
                flush=True,
            )
    if different:
        print(f"the two revisions built different trees at: {', '.join(different)}")


if __name__ == "__main__":
    main()
