"""Writes the golden records of ``mctx.stochastic_muzero_policy`` (tests/data/mctx_stochastic_golden).

Not a test (pytest does not collect it): it needs JAX and mctx, which the project's virtualenv does
not have. Run it from the repository root with a separate virtualenv holding the versions of the
``peers`` extra::

    python3 -m venv /work/peers-venv
    /work/peers-venv/bin/pip install jax==0.10.2 jaxlib==0.10.2 mctx==0.0.71 "numpy==2.4.*"
    /work/peers-venv/bin/python tests/search/generate_stochastic_golden.py          # (re)write all
    /work/peers-venv/bin/python tests/search/generate_stochastic_golden.py --check  # re-run mctx

Each record is a seeded random table MDP with afterstates (see the README next to the records),
a batch of roots and one ``jax.jit``-wrapped call of ``mctx.stochastic_muzero_policy``. The
script runs the independent numpy reference (`tests.search.stochastic_reference`) on every
root, re-draws a root (its state, and its invalid-action row) whose search has a decision with a
relative margin below `MARGIN` or that the reference does not reproduce, writes the record, then
re-runs mctx on the written file and asserts bit-identical outputs. ``--check`` does only the
re-run, for every record on disk.

mctx returns its tree cut to the ``A`` decision edges. To also record the ``A + C`` wide tree
the search built, the policy's final ``_mask_tree`` call is observed while the jitted function is
traced (a pass-through wrapper; the policy outputs are asserted bit-identical to an unobserved
call).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import mctx
import numpy as np
from mctx._src import policies as mctx_policies

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.search import stochastic_reference as ref  # noqa: E402

OUT_DIR = REPO / "tests" / "data" / "mctx_stochastic_golden"
MARGIN = 2e-6  # smallest relative decision margin a stored root may have
MAX_REDRAWS = 400  # per record
CHILDREN_LIMIT = 25_000  # children arrays are stored when B * (N + 1) * (A + C) <= this
TOL = dict(rtol=1e-5, atol=1e-5)
FORMAT_VERSION = 1

TABLE_KEYS = (
    "afterstate",
    "prior_logits",
    "value",
    "afterstate_value",
    "chance_logits",
    "next_state",
    "reward",
    "discount",
)
TREE_KEYS = (
    "node_visits",
    "node_values",
    "raw_values",
    "parents",
    "action_from_parent",
    "is_decision_node",
    "state_embedding",
    "afterstate_embedding",
)
CHILDREN_KEYS = (
    "children_index",
    "children_visits",
    "children_values",
    "children_prior_logits",
    "children_rewards",
    "children_discounts",
)
POLICY_KEYS = (
    "action",
    "action_weights",
    "root_visit_counts",
    "root_visit_probs",
    "root_value",
    "root_qvalues",
    "root_prior_logits_used",
    "dirichlet_noise",
    "action_sampling_gumbel",
)


# ----------------------------------------------------------------------------- the cases


def _case(name, A, C, B, N, seed, *, discount="g0997", invalid="none", max_depth=None, **kw):
    kwargs = dict(kw.pop("kwargs", {"dirichlet_fraction": 0.0}))
    return dict(
        case=name,
        num_actions=A,
        num_chance_outcomes=C,
        batch_size=B,
        num_simulations=N,
        seed=seed,
        discount_mode=discount,
        invalid_mode=invalid,
        max_depth=max_depth,
        kwargs_passed=kwargs,
        prior_scale=kw.pop("prior_scale", 1.0),
        chance_scale=kw.pop("chance_scale", 1.0),
    )


DIRICHLET = {"dirichlet_fraction": 0.25, "dirichlet_alpha": 0.3}
CASES = [
    _case("basic", 2, 2, 1, 1, 7001),
    _case("basic", 3, 2, 4, 2, 7002),
    _case("basic", 4, 3, 4, 8, 7003, invalid="all_valid"),
    _case("basic", 9, 6, 16, 50, 7004),
    _case("basic", 5, 4, 8, 100, 7005, discount="g1"),
    _case("basic", 2, 6, 16, 100, 7006, discount="g0997_term"),
    _case("basic", 6, 2, 1, 100, 7007, chance_scale=2.0),
    _case("invalid", 4, 3, 8, 16, 7101, invalid="random"),
    _case("invalid", 9, 4, 16, 50, 7102, invalid="random"),
    _case("invalid", 7, 5, 8, 100, 7103, invalid="random_single"),
    _case("two_player", 5, 3, 8, 50, 7201, discount="2p"),
    _case("two_player", 9, 6, 4, 100, 7202, discount="2p_term"),
    _case("two_player", 3, 2, 16, 30, 7203, discount="2p_term", invalid="random"),
    _case("max_depth", 4, 3, 8, 50, 7301, max_depth=1),
    _case("max_depth", 5, 2, 8, 100, 7302, max_depth=2),
    _case("max_depth", 3, 4, 4, 100, 7303, max_depth=4, discount="2p"),
    _case("max_depth", 9, 3, 4, 60, 7304, max_depth=3, discount="g0997_term"),
    _case("dirichlet", 6, 3, 8, 50, 7401, kwargs=DIRICHLET),
    _case("dirichlet", 9, 5, 16, 100, 7402, invalid="random", kwargs=DIRICHLET),
    _case(
        "dirichlet",
        4,
        2,
        4,
        20,
        7403,
        discount="2p",
        kwargs={"dirichlet_fraction": 0.5, "dirichlet_alpha": 0.03},
    ),
    _case("defaults", 8, 6, 16, 100, 7404, kwargs={}),  # every mctx default: noise on
    _case(
        "hparams",
        6,
        4,
        8,
        100,
        7501,
        kwargs={"dirichlet_fraction": 0.0, "pb_c_init": 2.0, "pb_c_base": 500.0},
    ),
    _case(
        "hparams",
        5,
        3,
        8,
        60,
        7502,
        discount="2p",
        kwargs={"dirichlet_fraction": 0.0, "pb_c_init": 0.5, "pb_c_base": 50.0},
    ),
    _case("hparams", 5, 3, 16, 50, 7503, kwargs={**DIRICHLET, "temperature": 0.25}),
    _case("hparams", 4, 2, 8, 30, 7504, kwargs={"dirichlet_fraction": 0.0, "temperature": 0.0}),
    _case(
        "hparams",
        6,
        3,
        8,
        60,
        7505,
        discount="2p",
        kwargs={
            "dirichlet_fraction": 0.0,
            "qtransform": "qtransform_by_min_max",
            "qtransform_params": {"min_value": -2.0, "max_value": 2.0},
        },
    ),
    _case(
        "hparams",
        7,
        2,
        4,
        80,
        7506,
        invalid="random",
        kwargs={**DIRICHLET, "qtransform_params": {"epsilon": 1e-3}},
    ),
]


def record_stem(index: int, cfg: dict) -> str:
    stem = (
        f"{index:03d}_{cfg['case']}_A{cfg['num_actions']}_C{cfg['num_chance_outcomes']}"
        f"_B{cfg['batch_size']}_N{cfg['num_simulations']}"
    )
    return stem + (f"_md{cfg['max_depth']}" if cfg["max_depth"] is not None else "")


def effective_config(cfg: dict) -> dict:
    """Every hyperparameter's effective value (mctx defaults where not passed)."""
    kw = cfg["kwargs_passed"]
    qtransform = kw.get("qtransform", "qtransform_by_parent_and_siblings")
    qparams = {"epsilon": 1e-8} if qtransform == "qtransform_by_parent_and_siblings" else {}
    qparams.update(kw.get("qtransform_params", {}))
    return dict(
        policy="stochastic_muzero_policy",
        dirichlet_fraction=kw.get("dirichlet_fraction", 0.25),
        dirichlet_alpha=kw.get("dirichlet_alpha", 0.3),
        pb_c_init=kw.get("pb_c_init", 1.25),
        pb_c_base=kw.get("pb_c_base", 19652),
        temperature=kw.get("temperature", 1.0),
        qtransform=qtransform,
        qtransform_params=qparams,
        invalid_actions_passed=cfg["invalid_mode"] != "none",
        num_states=8 * cfg["num_actions"],
        num_afterstates=8 * cfg["num_actions"],
    )


def policy_kwargs(cfg: dict) -> dict:
    """The keyword arguments handed to mctx (exactly those in ``kwargs_passed``)."""
    kw = dict(cfg["kwargs_passed"])
    name = kw.pop("qtransform", None)
    params = kw.pop("qtransform_params", None)
    if name is not None or params is not None:
        name = name or "qtransform_by_parent_and_siblings"
        kw["qtransform"] = functools.partial(getattr(mctx, name), **(params or {}))
    return kw


# ----------------------------------------------------------------------------- the MDP


def make_tables(rng: np.random.Generator, cfg: dict) -> dict:
    """Random tables: states ``S``, afterstates ``S'``, actions ``A``, chance codes ``C``."""
    A, C = cfg["num_actions"], cfg["num_chance_outcomes"]
    S, SA = cfg["num_states"], cfg["num_afterstates"]
    mode = cfg["discount_mode"]
    f32 = np.float32
    tables = dict(
        afterstate=rng.integers(SA, size=(S, A)).astype(np.int32),
        prior_logits=(rng.standard_normal((S, A)) * cfg["prior_scale"]).astype(f32),
        chance_logits=(rng.standard_normal((SA, C)) * cfg["chance_scale"]).astype(f32),
        next_state=rng.integers(S, size=(SA, C)).astype(np.int32),
    )
    terminal = rng.random((SA, C)) < 0.1
    if mode.startswith("2p"):
        tables["value"] = rng.uniform(-1, 1, S).astype(f32)
        tables["afterstate_value"] = rng.uniform(-1, 1, SA).astype(f32)
        if mode == "2p_term":
            outcome = rng.choice([-1.0, 0.0, 1.0], size=(SA, C))
            tables["reward"] = np.where(terminal, outcome, 0.0).astype(f32)
            tables["discount"] = np.where(terminal, 0.0, -1.0).astype(f32)
        else:
            tables["reward"] = rng.uniform(-0.2, 0.2, (SA, C)).astype(f32)
            tables["discount"] = np.full((SA, C), -1.0, f32)
    else:
        tables["value"] = rng.standard_normal(S).astype(f32)
        tables["afterstate_value"] = rng.standard_normal(SA).astype(f32)
        tables["reward"] = (rng.standard_normal((SA, C)) * 0.3).astype(f32)
        gamma = 1.0 if mode == "g1" else 0.997
        discount = (
            np.where(terminal, 0.0, gamma) if mode == "g0997_term" else np.full((SA, C), gamma)
        )
        tables["discount"] = discount.astype(f32)
    return {k: tables[k] for k in TABLE_KEYS}


def draw_root(rng: np.random.Generator, cfg: dict, row: int) -> tuple[int, np.ndarray]:
    """A root state and its invalid-action row (True = invalid, never all True)."""
    A = cfg["num_actions"]
    state = int(rng.integers(cfg["num_states"]))
    mode = cfg["invalid_mode"]
    invalid = np.zeros(A, bool)
    if mode == "random_single" and row % 3 == 0:
        invalid[:] = True
        invalid[rng.integers(A)] = False
    elif mode in ("random", "random_single"):
        invalid = rng.random(A) < 0.35
        if invalid.all():
            invalid[rng.integers(A)] = False
    return state, invalid


def table_functions(A: int):
    """mctx's two model functions over the tables in ``params`` (int32 ids as embeddings).

    mctx calls both on every expansion, each with the other kind's arguments too (an action
    ``>= A`` or a negative code, a -1 embedding); such out-of-range calls return embedding -1.
    """

    def decision_fn(params, rng_key, action, state):
        del rng_key
        S, SA = params["afterstate"].shape[0], params["afterstate_value"].shape[0]
        ok = (state >= 0) & (state < S) & (action >= 0) & (action < A)
        after = params["afterstate"][jnp.clip(state, 0, S - 1), jnp.clip(action, 0, A - 1)]
        after = jnp.where(ok, after, -1)
        lookup = jnp.clip(after, 0, SA - 1)
        out = mctx.DecisionRecurrentFnOutput(
            chance_logits=params["chance_logits"][lookup],
            afterstate_value=params["afterstate_value"][lookup],
        )
        return out, after

    def chance_fn(params, rng_key, code, afterstate):
        del rng_key
        SA, C = params["next_state"].shape
        S = params["value"].shape[0]
        ok = (afterstate >= 0) & (afterstate < SA) & (code >= 0) & (code < C)
        a_idx, c_idx = jnp.clip(afterstate, 0, SA - 1), jnp.clip(code, 0, C - 1)
        state = jnp.where(ok, params["next_state"][a_idx, c_idx], -1)
        lookup = jnp.clip(state, 0, S - 1)
        out = mctx.ChanceRecurrentFnOutput(
            action_logits=params["prior_logits"][lookup],
            value=params["value"][lookup],
            reward=params["reward"][a_idx, c_idx],
            discount=params["discount"][a_idx, c_idx],
        )
        return out, state

    return decision_fn, chance_fn


# ----------------------------------------------------------------------------- running mctx


@contextlib.contextmanager
def observe_final_mask_tree(captured: dict):
    """Keeps the batched tree handed to mctx's final ``_mask_tree`` (pass-through)."""
    original = mctx_policies._mask_tree

    def observed(tree, num_actions, mode):
        if tree.node_values.ndim == 2:  # the batched tree; selection masks unbatched ones
            captured["tree"] = tree
        return original(tree, num_actions, mode)

    mctx_policies._mask_tree = observed
    try:
        yield captured
    finally:
        mctx_policies._mask_tree = original


def make_runner(cfg: dict, *, observe: bool):
    """A jitted ``(params, key, root_state, root_invalid) -> dict of arrays``."""
    A, B = cfg["num_actions"], cfg["batch_size"]
    decision_fn, chance_fn = table_functions(A)
    kwargs = policy_kwargs(cfg)

    def run(params, key, root_state, root_invalid):
        root = mctx.RootFnOutput(
            prior_logits=params["prior_logits"][root_state],
            value=params["value"][root_state],
            embedding=root_state,
        )
        captured: dict = {}
        context = observe_final_mask_tree(captured) if observe else contextlib.nullcontext()
        with context:
            out = mctx.stochastic_muzero_policy(
                params,
                key,
                root,
                decision_fn,
                chance_fn,
                num_simulations=cfg["num_simulations"],
                invalid_actions=root_invalid if cfg["invalid_actions_passed"] else None,
                max_depth=cfg["max_depth"],
                **kwargs,
            )
        tree = out.search_tree
        summary = tree.summary()
        # The randomness mctx drew, from the same key splits as the policy.
        action_key, dirichlet_key, _ = jax.random.split(key, 3)
        alpha = jnp.full([A], fill_value=cfg["dirichlet_alpha"])
        result = dict(
            action=out.action,
            action_weights=out.action_weights,
            root_visit_counts=summary.visit_counts,
            root_visit_probs=summary.visit_probs,
            root_value=summary.value,
            root_qvalues=summary.qvalues,
            root_prior_logits_used=tree.children_prior_logits[:, 0],
            dirichlet_noise=jax.random.dirichlet(dirichlet_key, alpha=alpha, shape=(B,)),
            action_sampling_gumbel=jax.random.gumbel(action_key, (B, A), jnp.float32),
            node_visits=tree.node_visits,
            node_values=tree.node_values,
            raw_values=tree.raw_values,
            parents=tree.parents,
            action_from_parent=tree.action_from_parent,
            is_decision_node=tree.embeddings.is_decision_node,
            state_embedding=tree.embeddings.state_embedding,
            afterstate_embedding=tree.embeddings.afterstate_embedding,
            **{f"masked_{k}": getattr(tree, k) for k in CHILDREN_KEYS},
        )
        if observe:
            full = captured["tree"]
            result.update({k: getattr(full, k) for k in CHILDREN_KEYS})
        return result

    return jax.jit(run)


def call(runner, cfg, tables, root_state, root_invalid) -> dict:
    params = {k: jnp.asarray(v) for k, v in tables.items()}
    key = jax.random.PRNGKey(cfg["seed"])
    out = runner(params, key, jnp.asarray(root_state), jnp.asarray(root_invalid))
    return {k: np.asarray(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- checks


def qtransform_of(cfg: dict):
    params = cfg["qtransform_params"]
    if cfg["qtransform"] == "qtransform_by_min_max":
        return ref.MinMax(**params)
    return ref.ParentAndSiblings(**params)


def reference_row(record: dict, cfg: dict, b: int) -> ref.Result:
    return ref.run_stochastic_muzero(
        ref.TableModel.from_record(record),
        record["root_prior_logits_used"][b, : cfg["num_actions"]],
        record["value"][record["root_state"][b]],
        record["root_state"][b],
        num_simulations=cfg["num_simulations"],
        invalid=record["root_invalid"][b] if cfg["invalid_actions_passed"] else None,
        qtransform=qtransform_of(cfg),
        max_depth=cfg["max_depth"],
        pb_c_init=cfg["pb_c_init"],
        pb_c_base=cfg["pb_c_base"],
        temperature=cfg["temperature"],
        action_gumbel=record["action_sampling_gumbel"][b],
    )


def row_mismatches(record: dict, cfg: dict, b: int, result: ref.Result) -> list[str]:
    """The outputs of row ``b`` that the reference does not reproduce."""
    bad = []
    arrays = result.arrays()
    exact = {
        "root_visit_counts": result.visit_counts,
        "action": result.action,
        **{k: arrays[k] for k in TREE_KEYS if k not in ("node_values", "raw_values")},
    }
    close = {
        "root_visit_probs": result.action_weights,
        "action_weights": result.action_weights,
        "root_value": result.root_value,
        "root_qvalues": result.qvalues,
        "node_values": arrays["node_values"],
        "raw_values": arrays["raw_values"],
    }
    if "children_index" in record:
        exact.update(
            children_index=arrays["children_index"], children_visits=arrays["children_visits"]
        )
        for k in (
            "children_values",
            "children_prior_logits",
            "children_rewards",
            "children_discounts",
        ):
            close[k] = arrays[k]
    for k, v in exact.items():
        if not np.array_equal(record[k][b], v):
            bad.append(k)
    for k, v in close.items():
        if not np.allclose(record[k][b], v, **TOL):
            bad.append(k)
    return bad


def expand_children(record: dict, A: int) -> dict:
    """The ``A + C`` wide children arrays rebuilt from the node arrays and the tables."""
    parents, edges = record["parents"], record["action_from_parent"]
    B, N1 = parents.shape
    width = A + record["chance_logits"].shape[1]
    out = dict(
        children_index=np.full((B, N1, width), -1, np.int32),
        children_visits=np.zeros((B, N1, width), np.int32),
        children_values=np.zeros((B, N1, width), np.float32),
        children_rewards=np.zeros((B, N1, width), np.float32),
        children_discounts=np.zeros((B, N1, width), np.float32),
        children_prior_logits=np.zeros((B, N1, width), np.float32),
    )
    b, n = np.nonzero(parents >= 0)
    p, e = parents[b, n], edges[b, n]
    out["children_index"][b, p, e] = n
    out["children_visits"][b, p, e] = record["node_visits"][b, n]
    out["children_values"][b, p, e] = record["node_values"][b, n]
    chance_edge = e >= A  # chance -> decision: the chance table's reward and discount
    after = record["afterstate_embedding"][b, p]
    code = np.where(chance_edge, e - A, 0)
    out["children_rewards"][b, p, e] = np.where(chance_edge, record["reward"][after, code], 0)
    out["children_discounts"][b, p, e] = np.where(chance_edge, record["discount"][after, code], 1)
    used = record["node_visits"] > 0
    decision = record["is_decision_node"]
    logits = out["children_prior_logits"]
    for bb, nn in zip(*np.nonzero(used), strict=True):
        if nn == 0:
            own = record["root_prior_logits_used"][bb, :A]
        elif decision[bb, nn]:
            own = record["prior_logits"][record["state_embedding"][bb, nn]]
        else:
            own = record["chance_logits"][record["afterstate_embedding"][bb, nn]]
        pad = np.full(width - own.size, -np.inf, np.float32)
        logits[bb, nn] = np.concatenate([own, pad] if decision[bb, nn] else [pad, own])
    return out


def check_mctx_conventions(record: dict, out: dict, cfg: dict):
    """What the README claims about a record, checked on mctx's own outputs."""
    A = cfg["num_actions"]
    for k in CHILDREN_KEYS:  # the returned tree is the A + C tree cut to the decision edges
        assert np.array_equal(out[f"masked_{k}"], out[k][..., :A]), k
    rebuilt = expand_children(record, A)
    for k in CHILDREN_KEYS:
        assert np.array_equal(rebuilt[k], out[k]), f"children rebuilt from nodes: {k}"
    assert np.array_equal(out["root_visit_counts"], out["children_visits"][:, 0, :A])
    assert np.array_equal(out["root_value"], out["node_values"][:, 0])
    assert np.all(out["children_prior_logits"][:, 0, A:] == -np.inf)
    assert np.all(out["node_visits"][:, 0] == cfg["num_simulations"] + 1)
    # the sampled action is the Gumbel-max of the temperature-scaled log weights
    log_w = np.log(np.maximum(out["action_weights"], np.finfo(np.float32).tiny))
    scale = np.maximum(np.float32(cfg["temperature"]), np.finfo(np.float32).tiny)
    with np.errstate(over="ignore"):  # temperature 0: -inf for all but the most visited
        scores = out["action_sampling_gumbel"] + (log_w - log_w.max(-1, keepdims=True)) / scale
    assert np.array_equal(np.argmax(scores, -1), out["action"])
    # the root logits are the Dirichlet mix of the table logits (then masked)
    for b in range(cfg["batch_size"]):
        expect = ref.root_prior_logits(
            record["prior_logits"][record["root_state"][b]],
            noise=out["dirichlet_noise"][b],
            fraction=cfg["dirichlet_fraction"],
            invalid=record["root_invalid"][b] if cfg["invalid_actions_passed"] else None,
        )
        np.testing.assert_allclose(out["root_prior_logits_used"][b, :A], expect, **TOL)


# ----------------------------------------------------------------------------- generation


def environment() -> dict:
    import importlib.metadata as md

    return dict(
        mctx_version=md.version("mctx"),
        jax_version=jax.__version__,
        jaxlib_version=md.version("jaxlib"),
        numpy_version=np.__version__,
        jax_backend=jax.default_backend(),
        jax_default_prng_impl=jax.config.jax_default_prng_impl,
        jax_threefry_partitionable=bool(jax.config.jax_threefry_partitionable),
        jax_enable_x64=bool(jax.config.jax_enable_x64),
        machine=platform.machine(),
    )


def to_record(cfg: dict, tables: dict, states, invalid, out: dict) -> dict:
    A, B, N, C = (
        cfg[k] for k in ("num_actions", "batch_size", "num_simulations", "num_chance_outcomes")
    )
    record = dict(
        config_json=np.array(json.dumps(cfg, sort_keys=True)),
        record_id=np.array(cfg["record_id"]),
        seed=np.array(cfg["seed"], np.int64),
        rng_key=np.asarray(jax.random.key_data(jax.random.PRNGKey(cfg["seed"])), np.uint32),
        **tables,
        root_state=np.asarray(states, np.int32),
        root_invalid=np.asarray(invalid, bool),
    )
    record.update({k: out[k] for k in POLICY_KEYS + TREE_KEYS})
    record["root_prior_logits_used"] = out["root_prior_logits_used"][:, :A]
    full = B * (N + 1) * (A + C) <= CHILDREN_LIMIT
    record["has_full_children"] = np.array(full)
    if full:
        record.update({k: out[k] for k in CHILDREN_KEYS})
    return record


def generate(index: int, case: dict, env: dict) -> tuple[Path, dict]:
    cfg = {**case, **effective_config(case)}
    cfg.update(
        record_id=f"stochastic/{record_stem(index, cfg)}",
        robust_margin_threshold=MARGIN,
        environment=env,
        format_version=FORMAT_VERSION,
    )
    rng = np.random.default_rng(cfg["seed"])
    tables = make_tables(rng, cfg)
    B = cfg["batch_size"]
    roots = [draw_root(rng, cfg, b) for b in range(B)]
    observed = make_runner(cfg, observe=True)
    redrawn = {"margin": 0, "mismatch": 0}
    for _ in range(MAX_REDRAWS):
        states = np.array([s for s, _ in roots], np.int32)
        invalid = np.stack([m for _, m in roots])
        out = call(observed, cfg, tables, states, invalid)
        record = to_record(cfg, tables, states, invalid, out)
        record.update({k: out[k] for k in CHILDREN_KEYS})  # compare the whole tree
        margins = np.zeros(B)
        bad_rows = []
        for b in range(B):
            result = reference_row(record, cfg, b)
            margins[b] = result.min_margin
            if result.min_margin < MARGIN:
                bad_rows.append(b)
                redrawn["margin"] += 1
            elif mismatches := row_mismatches(record, cfg, b, result):
                print(
                    f"  row {b}: reference differs on {mismatches} (margin {result.min_margin:.2e})"
                )
                bad_rows.append(b)
                redrawn["mismatch"] += 1
        if not bad_rows:
            break
        for b in bad_rows:
            roots[b] = draw_root(rng, cfg, b)
    else:
        raise RuntimeError(f"{cfg['record_id']}: no robust roots after {MAX_REDRAWS} draws")
    check_mctx_conventions(record, out, cfg)
    cfg["rows_redrawn"] = redrawn["margin"] + redrawn["mismatch"]
    cfg["rows_redrawn_for_mismatch"] = redrawn["mismatch"]
    record = to_record(cfg, tables, states, invalid, out)
    record["ref_row_min_margin"] = margins
    path = OUT_DIR / f"{record_stem(index, cfg)}.npz"
    np.savez_compressed(path, **record)
    return path, redrawn


def check(path: Path):
    """Re-runs mctx (a fresh jit, observed and not) on a written record: bit-identical."""
    with np.load(path, allow_pickle=False) as z:
        record = {k: z[k] for k in z.files}
    cfg = json.loads(str(record["config_json"]))
    tables = {k: record[k] for k in TABLE_KEYS}
    args = (cfg, tables, record["root_state"], record["root_invalid"])
    plain = call(make_runner(cfg, observe=False), *args)
    observed = call(make_runner(cfg, observe=True), *args)
    A = cfg["num_actions"]
    for k in POLICY_KEYS + TREE_KEYS:
        stored = record[k]
        for out in (plain, observed):
            got = out[k][:, :A] if k == "root_prior_logits_used" else out[k]
            assert got.dtype == stored.dtype and got.tobytes() == stored.tobytes(), (path.name, k)
    for k in CHILDREN_KEYS:
        assert plain[f"masked_{k}"].tobytes() == observed[f"masked_{k}"].tobytes(), (path.name, k)
        if bool(record["has_full_children"]):
            assert observed[k].tobytes() == record[k].tobytes(), (path.name, k)
            assert plain[f"masked_{k}"].tobytes() == record[k][..., :A].tobytes(), (path.name, k)
    check_mctx_conventions(record, observed, cfg)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only re-run mctx on the records")
    args = parser.parse_args()
    if not args.check:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        for old in OUT_DIR.glob("*.npz"):
            old.unlink()
        env = environment()
        for index, case in enumerate(CASES):
            start = time.time()
            path, redrawn = generate(index, case, env)
            print(
                f"{path.name}: {path.stat().st_size} B, redrawn {redrawn}, {time.time() - start:.1f}s"
            )
    paths = sorted(OUT_DIR.glob("*.npz"))
    for path in paths:
        check(path)
    total = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} records re-run in mctx, bit-identical; {total} B in total")


if __name__ == "__main__":
    main()
