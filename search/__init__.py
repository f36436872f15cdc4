"""Batched MCTS on numpy arrays with numba kernels (mctx semantics by default).

Knows nothing of torch models, games or Lightning: give it a `RootOutput` and a batched
``recurrent_fn``; get a `SearchOutput`.
"""

from search._numba_cache import invalidate_if_sources_changed

invalidate_if_sources_changed()

from search.policies import gumbel_muzero_policy, muzero_policy  # noqa: E402
from search.qtransforms import (  # noqa: E402
    QTransform,
    qtransform_by_min_max,
    qtransform_by_parent_and_siblings,
    qtransform_completed_by_mix_value,
    qtransform_tree_min_max,
)
from search.records import RootOutput, SearchOutput, StepOutput  # noqa: E402
from search.rng import root_keys  # noqa: E402
from search.tabular import TabularModel, tabular_model  # noqa: E402
from search.tree import NO_PARENT, ROOT_INDEX, UNVISITED, Tree, tree_depths  # noqa: E402

__all__ = [
    "NO_PARENT",
    "ROOT_INDEX",
    "UNVISITED",
    "QTransform",
    "RootOutput",
    "SearchOutput",
    "StepOutput",
    "TabularModel",
    "Tree",
    "gumbel_muzero_policy",
    "muzero_policy",
    "qtransform_by_min_max",
    "qtransform_by_parent_and_siblings",
    "qtransform_completed_by_mix_value",
    "qtransform_tree_min_max",
    "root_keys",
    "tabular_model",
    "tree_depths",
]
