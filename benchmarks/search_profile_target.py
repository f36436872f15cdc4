"""A fixed, torch-free workload for profilers (callgrind, py-spy, perf): serial tabular Gumbel
searches at B=256, N=50, A=18, the point where Gumbel misses its 10x target.

    valgrind --tool=callgrind python -m benchmarks.search_profile_target 6

Subtract a run with 1 search from a run with 6 to remove import and compile costs.
"""

from __future__ import annotations

import sys

import numpy as np

import search
import search.search


def main(num_searches: int) -> None:
    search.search.PARALLEL_MIN_TABULAR_WORK = 10**12  # one thread: cleaner profiles
    num_actions, num_states, batch_size = 18, 4096, 256
    rng = np.random.default_rng(0)
    model = search.tabular_model(
        rng.integers(0, num_states, (num_states, num_actions)),
        rng.normal(0, 0.3, (num_states, num_actions)).astype(np.float32),
        np.full((num_states, num_actions), 0.997, np.float32),
        rng.normal(0, 1, (num_states, num_actions)).astype(np.float32),
        rng.normal(0, 1, num_states).astype(np.float32),
    )
    states = rng.integers(0, num_states, batch_size).astype(np.int32)
    root = search.RootOutput(model.prior_logits[states], model.value[states], states)
    for i in range(num_searches):
        search.gumbel_muzero_policy(root, model, num_simulations=50, seed=i)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
