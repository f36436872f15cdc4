"""Batched MCTS on numpy arrays with numba kernels (mctx semantics by default).

Knows nothing of torch models, games or Lightning: give it a `RootOutput` and a batched
``recurrent_fn``; get a `SearchOutput`. `SearchSettings` and `run` are the configured search
that every caller uses.

Names load on first use (PEP 562), so that reading `SearchSettings` (a config schema, needed
by ``--help``) does not start numba.
"""

from __future__ import annotations

import importlib

from search._numba_cache import invalidate_if_sources_changed

invalidate_if_sources_changed()

_SOURCES = {
    "gumbel_muzero_policy": "policies",
    "muzero_policy": "policies",
    "stochastic_gumbel_muzero_policy": "stochastic_policies",
    "stochastic_muzero_policy": "stochastic_policies",
    "QTransform": "qtransforms",
    "qtransform_by_min_max": "qtransforms",
    "qtransform_by_parent_and_siblings": "qtransforms",
    "qtransform_completed_by_mix_value": "qtransforms",
    "qtransform_tree_min_max": "qtransforms",
    "AfterstateOutput": "records",
    "ChanceModel": "records",
    "RootOutput": "records",
    "SearchOutput": "records",
    "StepOutput": "records",
    "StochasticEmbeddings": "records",
    "root_keys": "rng",
    "SEARCH_POLICIES": "settings",
    "SearchSettings": "settings",
    "run": "settings",
    "TabularModel": "tabular",
    "tabular_model": "tabular",
    "NO_PARENT": "tree",
    "ROOT_INDEX": "tree",
    "UNVISITED": "tree",
    "Tree": "tree",
    "tree_depths": "tree",
}
__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'search' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"search.{_SOURCES[name]}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SOURCES])
