"""The search settings, declared once, and the one place that turns them into a search.

``SearchSettings`` is the ``search`` config group (Hydra reads this dataclass as its schema) and
what every caller hands to `run`: self-play, evaluation, reanalyze and the LLM bridge's
decoding. `run` chooses PUCT (`muzero_policy`) or Gumbel (`gumbel_muzero_policy`) by
``settings.policy``, and their Stochastic MuZero forms when the model is a `ChanceModel`, so no
caller repeats that choice or its argument lists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from search.records import RootOutput, SearchOutput

SEARCH_POLICIES = ("puct", "gumbel")
# PUCT's value normalisation: mctx's (unvisited children score the minimum) or
# EfficientZero/LightZero's tree-wide min-max with unvisited children at the parent's mean Q.
# Neither makes 32 simulations try a winning move whose prior is below ~1%; Gumbel's root, which
# visits every considered action, does. Gumbel always uses completed Q.
PUCT_QTRANSFORMS = ("parent_and_siblings", "tree_min_max")


@dataclass
class SearchSettings:
    policy: str = "puct"  # puct | gumbel (set by the algorithm)
    num_simulations: int = 32
    eval_simulations: int = 32  # evaluation and play (0 = raw policy)
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    dirichlet_legal_only: bool = True
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    max_num_considered_actions: int = 16  # gumbel
    gumbel_scale: float = 1.0  # gumbel
    qtransform: str = "parent_and_siblings"  # puct: parent_and_siblings | tree_min_max

    def __post_init__(self):
        if self.qtransform not in PUCT_QTRANSFORMS:
            raise ValueError(
                f"search.qtransform must be one of {PUCT_QTRANSFORMS}, got {self.qtransform!r}"
            )
        if self.policy not in SEARCH_POLICIES:
            raise ValueError(f"search.policy must be one of {SEARCH_POLICIES}, got {self.policy!r}")
        if self.num_simulations < 1:
            raise ValueError(f"search.num_simulations must be >= 1, got {self.num_simulations}")
        # The policies check these too, but only at the first search: after a run has begun.
        _check_range("dirichlet_alpha", self.dirichlet_alpha, "> 0", lambda x: x > 0)
        _check_range(
            "dirichlet_fraction", self.dirichlet_fraction, "in [0, 1]", lambda x: 0 <= x <= 1
        )
        _check_range("pb_c_init", self.pb_c_init, ">= 0", lambda x: x >= 0)
        _check_range("pb_c_base", self.pb_c_base, "> 0", lambda x: x > 0)
        _check_range("gumbel_scale", self.gumbel_scale, ">= 0", lambda x: x >= 0)


def _check_range(name: str, value: float, accepted: str, ok: Callable[[float], bool]) -> None:
    if not (np.isfinite(value) and ok(value)):
        raise ValueError(f"search.{name} must be a finite number {accepted}, got {value}")


def run(
    root: RootOutput,
    recurrent_fn: Callable,
    settings: SearchSettings,
    *,
    legal_mask: np.ndarray | None = None,
    keys: np.ndarray | int = 0,
    deterministic: bool = False,
    temperature: float = 1.0,
    value_prefix_horizon: int | None = None,
) -> SearchOutput:
    """The configured search from ``root`` in ``recurrent_fn`` (or a `ChanceModel`); ``keys``
    are per-root keys (or one seed) and ``temperature`` shapes PUCT's sampled action (Gumbel
    plays sequential halving's choice)."""
    from search import policies, stochastic_policies  # numba: on first search
    from search.qtransforms import qtransform_tree_min_max
    from search.records import ChanceModel

    common = dict(
        num_simulations=settings.num_simulations,
        legal_mask=legal_mask,
        seed=keys,
        deterministic=deterministic,
    )
    if isinstance(recurrent_fn, ChanceModel):  # Stochastic MuZero: decision and chance nodes
        if value_prefix_horizon:
            raise ValueError("a ChanceModel's search takes per-step rewards, not a value prefix")
        gumbel_policy = stochastic_policies.stochastic_gumbel_muzero_policy
        puct_policy = stochastic_policies.stochastic_muzero_policy
        model_fns = (recurrent_fn.decision_fn, recurrent_fn.chance_fn)
        common["num_chance_outcomes"] = recurrent_fn.num_chance_outcomes
    else:
        gumbel_policy, puct_policy = policies.gumbel_muzero_policy, policies.muzero_policy
        model_fns = (recurrent_fn,)
        common["value_prefix_horizon"] = value_prefix_horizon
    if settings.policy == "gumbel":
        return gumbel_policy(
            root,
            *model_fns,
            max_num_considered_actions=settings.max_num_considered_actions,
            gumbel_scale=settings.gumbel_scale,
            **common,
        )
    return puct_policy(
        root,
        *model_fns,
        dirichlet_alpha=settings.dirichlet_alpha,
        dirichlet_fraction=settings.dirichlet_fraction,
        dirichlet_legal_only=settings.dirichlet_legal_only,
        pb_c_init=settings.pb_c_init,
        pb_c_base=settings.pb_c_base,
        temperature=temperature,
        qtransform=qtransform_tree_min_max() if settings.qtransform == "tree_min_max" else None,
        **common,
    )
