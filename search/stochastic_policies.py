"""Public Stochastic MuZero policies: ``stochastic_muzero_policy`` (PUCT at decision nodes,
mctx's semantics) and ``stochastic_gumbel_muzero_policy`` (Gumbel MuZero's rules at decision
nodes).

Stochastic MuZero (Antonoglou et al., ICLR 2022) plans with two model functions instead of one
recurrent function: a *decision* function from a state and an action to an afterstate (the
state after the agent acted, before chance did) and a *chance* function from an afterstate and
an outcome code to the next state. The arguments and defaults follow `search.policies`; the
tree and the loop are in `search.stochastic_search` and `search.stochastic_kernels`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from search import kernels, rng
from search.policies import (
    _GUMBEL_QTRANSFORM,
    _PUCT_QTRANSFORM,
    _action_from_visits,
    _check_gumbel_settings,
    _check_puct_settings,
    _check_qtransform,
    _improved_policy,
    _max_depth,
    _root_gumbel,
    _root_noise,
    _validate_root,
)
from search.qtransforms import COMPLETED_BY_MIX_VALUE, QTransform
from search.records import RootOutput, SearchOutput
from search.stochastic_search import run_stochastic_search
from search.validation import positive_int


def stochastic_muzero_policy(
    root: RootOutput,
    decision_fn: Callable,
    chance_fn: Callable,
    *,
    num_simulations: int,
    num_chance_outcomes: int,
    legal_mask: Any = None,
    max_depth: int | None = None,
    seed: int | np.ndarray = 0,
    deterministic: bool = False,
    dirichlet_fraction: float = 0.25,
    dirichlet_alpha: float = 0.3,
    dirichlet_legal_only: bool = False,
    pb_c_init: float = 1.25,
    pb_c_base: float = 19652.0,
    temperature: float = 1.0,
    qtransform: QTransform | None = None,
    dirichlet_noise: Any = None,
    action_gumbel: Any = None,
) -> SearchOutput:
    """Stochastic MuZero search: decision nodes (states) choose actions by PUCT, chance nodes
    (afterstates) choose outcome codes by ``argmax_c p(c) / (N(c) + 1)``. The trees of mctx's
    ``stochastic_muzero_policy``, with one call per simulation of only the model function each
    new node needs (mctx calls both).

    Args (beyond `search.muzero_policy`'s):
      decision_fn: ``(state_embedding [K, ...], action [K]) -> (AfterstateOutput,
        afterstate_embedding [K, ...])``, called on the K roots whose new node is an
        afterstate.
      chance_fn: ``(afterstate_embedding [K, ...], code [K]) -> (StepOutput,
        state_embedding [K, ...])``, called on the K roots whose new node is a state; the
        reward and discount are those of the chance edge (``-1`` = the player to move changes).
        ``StepOutput.legal`` may mask the new state's actions (mctx cannot).
      num_chance_outcomes: C, the number of chance codes (``AfterstateOutput.chance_logits``
        is ``[K, C]``).
      max_depth: most edges per descent, decision and chance edges alike.
      qtransform: a PUCT transform (default ``qtransform_by_parent_and_siblings``).

    Returns:
      `SearchOutput`: ``action``, ``action_weights`` (the root visit probabilities),
      ``visit_counts`` and ``qvalues`` over the A actions; ``tree`` is ``A + C`` slots wide
      (edge ``a`` = action, edge ``A + c`` = code; ``tree.children_*[..., :A]`` is the tree
      mctx returns); ``embeddings`` is a `search.StochasticEmbeddings` with the node kinds.
    """
    prior_logits, value, legal_mask, batch_size, _ = _validate_root(root, legal_mask)
    num_simulations = positive_int(num_simulations, "num_simulations")
    num_chance_outcomes = positive_int(num_chance_outcomes, "num_chance_outcomes")
    dirichlet_fraction, temperature = _check_puct_settings(
        deterministic, dirichlet_fraction, temperature, pb_c_init, pb_c_base
    )
    keys = rng.root_keys(seed, batch_size)
    noise = _root_noise(
        keys, legal_mask, dirichlet_fraction, dirichlet_alpha, dirichlet_legal_only, dirichlet_noise
    )
    qtransform = _check_qtransform(_PUCT_QTRANSFORM if qtransform is None else qtransform)
    if qtransform.kind == COMPLETED_BY_MIX_VALUE:
        raise ValueError(
            "stochastic_muzero_policy selects by PUCT; qtransform_completed_by_mix_value is "
            "Gumbel MuZero's (stochastic_gumbel_muzero_policy). Use "
            "qtransform_by_parent_and_siblings, qtransform_by_min_max or qtransform_tree_min_max"
        )
    params = kernels.kernel_params(
        policy=kernels.POLICY_MUZERO,
        qtransform=qtransform,
        pb_c_init=float(pb_c_init),
        pb_c_base=float(pb_c_base),
        max_depth=_max_depth(max_depth, num_simulations),
        value_prefix_horizon=0,
    )
    roots = kernels.make_roots(prior_logits, value, legal_mask, noise, dirichlet_fraction, 0)
    tree, embeddings, results = run_stochastic_search(
        roots=roots,
        embedding=root.embedding,
        decision_fn=decision_fn,
        chance_fn=chance_fn,
        num_simulations=num_simulations,
        num_chance_outcomes=num_chance_outcomes,
        params=params,
    )
    action, action_weights = _action_from_visits(
        results.visit_counts, legal_mask, keys, deterministic, temperature, action_gumbel
    )
    return _output(tree, embeddings, action, action_weights, results)


def stochastic_gumbel_muzero_policy(
    root: RootOutput,
    decision_fn: Callable,
    chance_fn: Callable,
    *,
    num_simulations: int,
    num_chance_outcomes: int,
    legal_mask: Any = None,
    max_depth: int | None = None,
    seed: int | np.ndarray = 0,
    deterministic: bool = False,
    max_num_considered_actions: int = 16,
    gumbel_scale: float = 1.0,
    qtransform: QTransform | None = None,
    gumbel: Any = None,
) -> SearchOutput:
    """Stochastic MuZero with Gumbel MuZero's rules at decision nodes (Danihelka et al. 2022):
    Gumbel-top-k sampling and sequential halving at the root, ``argmax(pi' - N / (1 + sum N))``
    at interior decision nodes; chance nodes as in `stochastic_muzero_policy`. Not in mctx.

    Args: as `stochastic_muzero_policy` and `search.gumbel_muzero_policy`.

    Returns:
      `SearchOutput` as `stochastic_muzero_policy`'s, with ``action`` the root's sequential
      halving choice and ``action_weights`` the improved policy ``softmax(logits + sigma(
      completed Q))`` over the legal actions.
    """
    prior_logits, value, legal_mask, batch_size, num_actions = _validate_root(root, legal_mask)
    num_simulations = positive_int(num_simulations, "num_simulations")
    num_chance_outcomes = positive_int(num_chance_outcomes, "num_chance_outcomes")
    max_num_considered_actions, gumbel_scale = _check_gumbel_settings(
        max_num_considered_actions, gumbel_scale
    )
    keys = rng.root_keys(seed, batch_size)  # validated even when unused
    root_gumbel = _root_gumbel(keys, num_actions, deterministic, gumbel_scale, gumbel)
    params = kernels.kernel_params(
        policy=kernels.POLICY_GUMBEL,
        qtransform=_check_qtransform(_GUMBEL_QTRANSFORM if qtransform is None else qtransform),
        max_depth=_max_depth(max_depth, num_simulations),
        value_prefix_horizon=0,
    )
    roots = kernels.make_roots(
        prior_logits, value, legal_mask, None, 0.0, max_num_considered_actions
    )
    tree, embeddings, results = run_stochastic_search(
        roots=roots,
        embedding=root.embedding,
        decision_fn=decision_fn,
        chance_fn=chance_fn,
        num_simulations=num_simulations,
        num_chance_outcomes=num_chance_outcomes,
        params=params,
        root_gumbel=root_gumbel,
    )
    return _output(tree, embeddings, results.action, _improved_policy(results), results)


def _output(tree, embeddings, action, action_weights, results) -> SearchOutput:
    return SearchOutput(
        action=action,
        action_weights=action_weights,
        root_value=results.root_value,
        visit_counts=results.visit_counts,
        qvalues=results.qvalues,
        tree=tree,
        embeddings=embeddings,
    )
