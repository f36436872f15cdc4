"""Public policies: ``muzero_policy`` (PUCT) and ``gumbel_muzero_policy``; the Stochastic
MuZero ones are in `search.stochastic_policies`.

Modelled on mctx's ``policies.py``: a root output, a batched recurrent function and keyword-only
hyperparameters with the papers' defaults. Differences from mctx, all deliberate:

* the recurrent function is ``recurrent_fn(embedding, action) -> (StepOutput, new_embedding)``
  (no params/rng: close over your network); in value-prefix mode it gets a third argument,
  ``is_reset [B] bool`` (zero the recurrent state you return for those rows);
* masks are ``legal_mask`` with True = legal, and may also come per node in ``StepOutput.legal``;
* randomness comes from per-root keys (``seed``), so a root's noise does not depend on the batch;
* ``deterministic=True`` turns every source of noise off (evaluation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from search import kernels, rng
from search.qtransforms import (
    QTRANSFORM_KINDS,
    QTransform,
    qtransform_by_parent_and_siblings,
    qtransform_completed_by_mix_value,
)
from search.records import RootOutput, SearchOutput
from search.search import run_search
from search.validation import (
    float_array,
    in_range,
    legal_mask_array,
    non_negative_float,
    positive_float,
    positive_int,
)

_FLOAT32_TINY = np.finfo(np.float32).tiny
# The defaults, built once: a QTransform is immutable, and building one costs a few us per search.
_PUCT_QTRANSFORM = qtransform_by_parent_and_siblings()
_GUMBEL_QTRANSFORM = qtransform_completed_by_mix_value()


def muzero_policy(
    root: RootOutput,
    recurrent_fn: Callable,
    *,
    num_simulations: int,
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
    value_prefix_horizon: int | None = None,
    dirichlet_noise: Any = None,
    action_gumbel: Any = None,
) -> SearchOutput:
    """MuZero's search (Schrittwieser et al. 2020) with AlphaZero's root Dirichlet noise.

    Args:
      root: `RootOutput` with ``prior_logits [B, A]``, ``value [B]`` and the root embedding.
      recurrent_fn: ``(embedding [B, ...], action [B]) -> (StepOutput, embedding [B, ...])``.
      num_simulations: simulations per root (N).
      legal_mask: ``[B, A]`` bool, True = legal at the root; ``None`` = all legal.
      max_depth: most edges per descent (default N); a selected existing child at the cut-off
        is re-evaluated, as in mctx.
      seed: an int, or ``[B]`` integer per-root keys (noise then independent of batch layout).
      deterministic: no Dirichlet noise and the most visited action (evaluation mode).
      dirichlet_fraction, dirichlet_alpha: root noise ``(1 - f) * prior + f * Dir(alpha)``.
      dirichlet_legal_only: draw the noise over legal actions only (mctx draws over all A
        and masks afterwards, which wastes noise mass on illegal actions).
      pb_c_init, pb_c_base: the pUCT exploration constants.
      temperature: the action is sampled from ``max(visits / N, tiny) ** (1 / temperature)`` as
        in mctx (so at high temperature an unvisited legal action keeps a tiny chance); 0 = argmax.
      qtransform: value normalisation (default mctx's by parent and siblings); see
        `search.qtransforms` for EfficientZero's tree-wide min-max.
      value_prefix_horizon: EfficientZero value prefix: ``StepOutput.reward`` is the predicted
        reward summed since the last reset; resets every ``H`` levels.
      dirichlet_noise, action_gumbel: ``[B, A]`` noise to use instead of drawing it (tests).

    Returns:
      `SearchOutput`; ``action_weights`` are the root visit probabilities.
    """
    prior_logits, value, legal_mask, batch_size, _ = _validate_root(root, legal_mask)
    num_simulations = positive_int(num_simulations, "num_simulations")
    dirichlet_fraction, temperature = _check_puct_settings(
        deterministic, dirichlet_fraction, temperature, pb_c_init, pb_c_base
    )
    keys = rng.root_keys(seed, batch_size)
    noise = _root_noise(
        keys,
        legal_mask,
        dirichlet_fraction,
        dirichlet_alpha,
        dirichlet_legal_only,
        dirichlet_noise,
    )
    params = kernels.kernel_params(
        policy=kernels.POLICY_MUZERO,
        qtransform=_check_qtransform(_PUCT_QTRANSFORM if qtransform is None else qtransform),
        pb_c_init=float(pb_c_init),
        pb_c_base=float(pb_c_base),
        max_depth=_max_depth(max_depth, num_simulations),
        value_prefix_horizon=_horizon(value_prefix_horizon),
    )
    roots = kernels.make_roots(prior_logits, value, legal_mask, noise, dirichlet_fraction, 0)
    tree, store, results = run_search(
        roots=roots,
        embedding=root.embedding,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        params=params,
    )
    action, action_weights = _action_from_visits(
        results.visit_counts, legal_mask, keys, deterministic, temperature, action_gumbel
    )
    return _search_output(tree, store, action, action_weights, results)


def _check_puct_settings(deterministic, dirichlet_fraction, temperature, pb_c_init, pb_c_base):
    """The checked ``(dirichlet_fraction, temperature)``; 0 noise in deterministic mode."""
    dirichlet_fraction = (
        0.0 if deterministic else in_range(dirichlet_fraction, "dirichlet_fraction", 0.0, 1.0)
    )
    temperature = float(temperature)
    if not (np.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0; got {temperature!r}")
    positive_float(pb_c_base, "pb_c_base")
    non_negative_float(pb_c_init, "pb_c_init")
    return dirichlet_fraction, temperature


def _root_noise(keys, legal_mask, fraction, alpha, legal_only, given) -> np.ndarray | None:
    """``[B, A]`` Dirichlet noise for the root prior (the caller's ``given`` noise if any),
    or None when ``fraction`` is 0."""
    if fraction <= 0:
        return None
    batch_size, num_actions = legal_mask.shape
    if given is not None:
        return float_array(given, "dirichlet_noise", (batch_size, num_actions))
    alpha = positive_float(alpha, "dirichlet_alpha")
    include = legal_mask if legal_only else np.ones_like(legal_mask)
    noise = np.empty((batch_size, num_actions), np.float64)
    rng.batch_dirichlet(keys, alpha, include, noise)
    return noise


def _action_from_visits(visit_counts, legal_mask, keys, deterministic, temperature, given_gumbel):
    """``(action [B], action_weights [B, A])``: the visit distribution, and an action sampled
    from it at ``temperature`` (mctx's Gumbel-max over the tempered log weights; the most
    visited action when ``deterministic`` or at temperature 0)."""
    batch_size, num_actions = visit_counts.shape
    action_weights = (visit_counts / visit_counts.sum(axis=1, keepdims=True)).astype(np.float32)
    if deterministic or temperature == 0:
        return np.argmax(visit_counts, axis=1).astype(np.int32), action_weights
    if given_gumbel is not None:
        gumbel = float_array(given_gumbel, "action_gumbel", (batch_size, num_actions))
    else:
        gumbel = np.empty((batch_size, num_actions), np.float64)
        rng.batch_gumbel(keys, rng.STREAM_ACTION, 1.0, gumbel)
    log_weights = np.log(np.maximum(action_weights, _FLOAT32_TINY))
    scores = gumbel + (log_weights - log_weights.max(axis=1, keepdims=True)) / max(
        temperature, _FLOAT32_TINY
    )
    action = np.argmax(np.where(legal_mask, scores, -np.inf), axis=1).astype(np.int32)
    return action, action_weights


def gumbel_muzero_policy(
    root: RootOutput,
    recurrent_fn: Callable,
    *,
    num_simulations: int,
    legal_mask: Any = None,
    max_depth: int | None = None,
    seed: int | np.ndarray = 0,
    deterministic: bool = False,
    max_num_considered_actions: int = 16,
    gumbel_scale: float = 1.0,
    qtransform: QTransform | None = None,
    value_prefix_horizon: int | None = None,
    gumbel: Any = None,
) -> SearchOutput:
    """Gumbel MuZero (Danihelka et al. 2022): Gumbel-top-k root sampling, sequential halving,
    deterministic interior selection, and the improved policy as ``action_weights``.

    Args (beyond `muzero_policy`'s):
      max_num_considered_actions: m, actions sampled without replacement at the root.
      gumbel_scale: scale of the root Gumbel noise (0 = deterministic top-k by logits + Q).
      qtransform: default ``qtransform_completed_by_mix_value()`` (the paper's sigma).
      gumbel: ``[B, A]`` root Gumbel noise to use instead of drawing it (tests).

    Returns:
      `SearchOutput`; ``action_weights`` = ``softmax(logits + sigma(completed Q))`` over legal
      actions, the paper's policy-improvement target.
    """
    prior_logits, value, legal_mask, batch_size, num_actions = _validate_root(root, legal_mask)
    num_simulations = positive_int(num_simulations, "num_simulations")
    max_num_considered_actions, gumbel_scale = _check_gumbel_settings(
        max_num_considered_actions, gumbel_scale
    )
    keys = rng.root_keys(seed, batch_size)  # validated even when unused
    root_gumbel = _root_gumbel(keys, num_actions, deterministic, gumbel_scale, gumbel)
    params = kernels.kernel_params(
        policy=kernels.POLICY_GUMBEL,
        qtransform=_check_qtransform(_GUMBEL_QTRANSFORM if qtransform is None else qtransform),
        max_depth=_max_depth(max_depth, num_simulations),
        value_prefix_horizon=_horizon(value_prefix_horizon),
    )
    roots = kernels.make_roots(
        prior_logits, value, legal_mask, None, 0.0, max_num_considered_actions
    )
    tree, store, results = run_search(
        roots=roots,
        embedding=root.embedding,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        params=params,
        root_gumbel=root_gumbel,
    )
    return _search_output(tree, store, results.action, _improved_policy(results), results)


def _check_gumbel_settings(max_num_considered_actions, gumbel_scale) -> tuple[int, float]:
    max_num_considered_actions = positive_int(
        max_num_considered_actions, "max_num_considered_actions"
    )
    gumbel_scale = float(gumbel_scale)
    if not (np.isfinite(gumbel_scale) and gumbel_scale >= 0):
        raise ValueError(f"gumbel_scale must be a finite number >= 0; got {gumbel_scale!r}")
    return max_num_considered_actions, gumbel_scale


def _root_gumbel(keys, num_actions, deterministic, gumbel_scale, given) -> np.ndarray:
    """``[B, A]`` float32 root Gumbel noise, the tree's own (zeros when ``deterministic``; a
    copy of the caller's ``given`` noise if any)."""
    batch_size = keys.shape[0]
    if deterministic:
        return np.zeros((batch_size, num_actions), np.float32)
    if given is not None:
        return float_array(given, "gumbel", (batch_size, num_actions)).copy()
    root_gumbel = np.empty((batch_size, num_actions), np.float32)
    rng.batch_gumbel(keys, rng.STREAM_GUMBEL, gumbel_scale, root_gumbel)
    return root_gumbel


def _improved_policy(results: kernels.RootResults) -> np.ndarray:
    """``[B, A]`` float32 ``softmax(logits + sigma(completed Q))``: the softmax of the kernel's
    shifted logits, in numpy (see `kernels._improved_logits`)."""
    weights = np.exp(results.improved_logits, out=results.improved_logits)
    weights /= weights.sum(axis=1, keepdims=True)
    return weights.astype(np.float32)


def _search_output(
    tree, store, action: np.ndarray, action_weights: np.ndarray, results: kernels.RootResults
) -> SearchOutput:
    return SearchOutput(
        action=action,
        action_weights=action_weights,
        root_value=results.root_value,
        visit_counts=results.visit_counts,
        qvalues=results.qvalues,
        tree=tree,
        embeddings=store.storage,
    )


def _validate_root(root: RootOutput, legal_mask: Any):
    if not isinstance(root, RootOutput):
        raise TypeError(f"root must be a search.RootOutput; got {type(root).__name__}")
    logits_shape = getattr(root.prior_logits, "shape", None)
    if logits_shape is None:
        raise ValueError(
            f"root.prior_logits must be an array [B, A] (numpy or torch); got a {type(root.prior_logits).__name__}"
        )
    if len(logits_shape) != 2 or 0 in tuple(logits_shape):
        raise ValueError(
            f"root.prior_logits must have shape [B, A] with B, A >= 1; got {tuple(logits_shape)}"
        )
    batch_size, num_actions = (int(n) for n in logits_shape)
    # Shapes and dtypes here; values (finite, a legal action per row) in `kernels.init_root`.
    shape = (batch_size, num_actions)
    prior_logits = float_array(root.prior_logits, "root.prior_logits", shape, check_finite=False)
    value = float_array(root.value, "root.value", (batch_size,), check_finite=False)
    if legal_mask is None:
        legal_mask = np.ones(shape, np.bool_)
    else:
        legal_mask = legal_mask_array(legal_mask, "legal_mask", shape, check_rows=False)
    return prior_logits, value, legal_mask, batch_size, num_actions


def _max_depth(max_depth: int | None, num_simulations: int) -> int:
    return num_simulations if max_depth is None else positive_int(max_depth, "max_depth")


def _horizon(value_prefix_horizon: int | None) -> int:
    if value_prefix_horizon is None:
        return 0
    return positive_int(value_prefix_horizon, "value_prefix_horizon")


def _check_qtransform(qtransform: QTransform) -> QTransform:
    if not isinstance(qtransform, QTransform) or qtransform.kind not in QTRANSFORM_KINDS:
        raise TypeError(
            "qtransform must be built with search.qtransform_by_parent_and_siblings, "
            "qtransform_by_min_max, qtransform_tree_min_max or qtransform_completed_by_mix_value; "
            f"got {type(qtransform).__name__}"
        )
    return qtransform
