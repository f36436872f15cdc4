"""`search.stochastic_muzero_policy` reproduces every mctx Stochastic MuZero golden record, and
calls per simulation only the model function each new node needs; its Gumbel variant
(`search.stochastic_gumbel_muzero_policy`, not in mctx) gives a valid improved policy.

Integer outputs (visit counts, tree structure, node kinds, embeddings, the sampled action) match
exactly; floats to ``rtol=atol=1e-5`` as in `test_mctx_parity` (float32 running means and exps).
Exact integer parity is robust: every stored root was drawn so that each of its decisions has a
relative margin of at least ``robust_margin_threshold`` (README section 5), which the test
re-checks against the record's reference margins.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import search
from search.search import PARALLEL_MIN_BATCH
from tests.search.stochastic_golden import golden_paths, load, run_record, table_functions

PATHS = golden_paths()
TOL = dict(rtol=1e-5, atol=1e-5)
RECORD = PATHS[3]  # 003_basic_A9_C6_B16_N50: the small record used by the behaviour tests


def test_stochastic_golden_records_are_present():
    assert len(PATHS) == 27, f"expected the 27 mctx stochastic records, found {len(PATHS)}"


def _own_slot_probs(logits: np.ndarray) -> np.ndarray:
    """Softmax over each node's own slots (the padding is -inf, or float32 min at the root)."""
    logits = logits.astype(np.float64)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_matches_mctx_stochastic_golden_record(path):
    record, cfg = load(path)
    assert record["ref_row_min_margin"].min() >= cfg["robust_margin_threshold"]
    out = run_record(record, cfg)
    tree, embeddings = out.tree, out.embeddings
    np.testing.assert_array_equal(out.visit_counts, record["root_visit_counts"].astype(np.int32))
    np.testing.assert_array_equal(out.action, record["action"])
    for key in ("node_visits", "parents", "action_from_parent"):
        np.testing.assert_array_equal(getattr(tree, key), record[key], err_msg=key)
    is_decision = embeddings.is_decision_node
    np.testing.assert_array_equal(is_decision, record["is_decision_node"])
    used = tree.node_visits > 0
    states, afterstates = used & is_decision, used & ~is_decision
    np.testing.assert_array_equal(embeddings.state[states], record["state_embedding"][states])
    np.testing.assert_array_equal(
        embeddings.afterstate[afterstates], record["afterstate_embedding"][afterstates]
    )
    np.testing.assert_allclose(out.action_weights, record["action_weights"], **TOL)
    np.testing.assert_allclose(out.root_value, record["root_value"], **TOL)
    np.testing.assert_allclose(out.qvalues, record["root_qvalues"], **TOL)
    np.testing.assert_allclose(tree.node_values, record["node_values"], **TOL)
    np.testing.assert_allclose(tree.raw_values, record["raw_values"], **TOL)
    assert bool(record["has_full_children"])
    np.testing.assert_array_equal(tree.children_index, record["children_index"])
    np.testing.assert_array_equal(tree.children_visits, record["children_visits"])
    for key in ("children_values", "children_rewards", "children_discounts"):
        np.testing.assert_allclose(getattr(tree, key), record[key], **TOL, err_msg=key)
    # The tree stores each node's logits shifted to a largest value of 0: compare the priors.
    np.testing.assert_allclose(
        tree.children_prior_probs[used],
        _own_slot_probs(record["children_prior_logits"][used]),
        **TOL,
    )


# ----------------------------------------------------------------------------- model calls


def _expected_calls(out: search.SearchOutput) -> list[tuple[str, int]]:
    """One call per simulation of each function some root needs: simulation ``i`` makes node
    ``i + 1`` of every tree, an afterstate (`decision_fn`) or a state (`chance_fn`)."""
    is_decision = out.embeddings.is_decision_node
    calls = []
    for node in range(1, is_decision.shape[1]):
        num_states = int(is_decision[:, node].sum())
        num_afterstates = is_decision.shape[0] - num_states
        if num_afterstates:
            calls.append(("decision_fn", num_afterstates))
        if num_states:
            calls.append(("chance_fn", num_states))
    return calls


@pytest.mark.parametrize("index", [0, 3, 11], ids=lambda i: PATHS[i].stem)
def test_each_simulation_calls_only_the_function_its_new_nodes_need(index):
    record, cfg = load(PATHS[index])
    calls = []
    out = run_record(record, cfg, calls)  # the table functions refuse out-of-range calls
    assert calls == _expected_calls(out)
    assert calls[0] == ("decision_fn", cfg["batch_size"])  # simulation 0 expands the roots
    assert sum(count for _, count in calls) == cfg["batch_size"] * cfg["num_simulations"]


def test_max_depth_reevaluations_call_one_function_per_root():
    record, cfg = load(PATHS[13])  # max_depth=1: afterstates re-evaluated, no state ever made
    calls = []
    run_record(record, cfg, calls)
    assert calls == [("decision_fn", cfg["batch_size"])] * cfg["num_simulations"]


@pytest.mark.slow  # compiling the prange kernels takes ~20 s on a cold numba cache
def test_large_batch_parallel_kernels_match_the_serial_search():
    """From `PARALLEL_MIN_BATCH` roots the kernels run under ``prange``; every
    root still gets the tree of the golden record's serial search."""
    record, cfg = load(RECORD)
    copies = -(-PARALLEL_MIN_BATCH // cfg["batch_size"])
    tiled = dict(record)
    for key in ("root_state", "root_prior_logits_used", "action_sampling_gumbel"):
        tiled[key] = np.concatenate([record[key]] * copies)
    out = run_record(tiled, dict(cfg, batch_size=cfg["batch_size"] * copies))
    np.testing.assert_array_equal(out.tree.parents, np.concatenate([record["parents"]] * copies))
    np.testing.assert_array_equal(out.action, np.concatenate([record["action"]] * copies))
    np.testing.assert_allclose(
        out.tree.node_values, np.concatenate([record["node_values"]] * copies), **TOL
    )


# ----------------------------------------------------------------------------- behaviour


def _small_root(record: dict):
    states = record["root_state"]
    return search.RootOutput(record["prior_logits"][states], record["value"][states], states)


def _run(record: dict, root=None, decision_fn=None, chance_fn=None, **kwargs):
    table_decision, table_chance = table_functions(record)
    kwargs.setdefault("num_simulations", 12)
    kwargs.setdefault("num_chance_outcomes", record["chance_logits"].shape[1])
    return search.stochastic_muzero_policy(
        _small_root(record) if root is None else root,
        decision_fn or table_decision,
        chance_fn or table_chance,
        **kwargs,
    )


def test_a_fixed_seed_gives_the_same_search():
    record, _ = load(RECORD)
    first, second = _run(record, seed=7), _run(record, seed=7)
    for key in ("action", "action_weights", "visit_counts", "root_value", "qvalues"):
        np.testing.assert_array_equal(getattr(first, key), getattr(second, key), err_msg=key)
    np.testing.assert_array_equal(first.tree.parents, second.tree.parents)
    other = _run(record, seed=8)
    assert not np.array_equal(
        first.tree.children_prior_logits[:, 0], other.tree.children_prior_logits[:, 0]
    )


def test_a_roots_search_does_not_depend_on_its_row():
    record, _ = load(RECORD)
    keys = np.arange(100, 100 + len(record["root_state"]), dtype=np.uint64)
    order = np.arange(len(keys))[::-1]
    root = _small_root(record)
    flipped = search.RootOutput(*(np.ascontiguousarray(x[order]) for x in root))
    forward = _run(record, root, seed=keys)
    backward = _run(record, flipped, seed=keys[order])
    np.testing.assert_array_equal(forward.visit_counts[order], backward.visit_counts)
    np.testing.assert_array_equal(forward.action[order], backward.action)


def test_object_embeddings_give_the_same_search():
    record, _ = load(RECORD)
    decision_fn, chance_fn = table_functions(record)

    def listed(fn):
        def wrapped(embedding, index):
            assert isinstance(embedding, list)
            output, new = fn(np.array(embedding, np.int32), index)
            return output, [int(x) for x in new]

        return wrapped

    root = _small_root(record)
    as_objects = root._replace(embedding=[int(s) for s in root.embedding])
    arrays = _run(record, root, seed=3)
    objects = _run(record, as_objects, listed(decision_fn), listed(chance_fn), seed=3)
    np.testing.assert_array_equal(arrays.tree.parents, objects.tree.parents)
    np.testing.assert_array_equal(arrays.visit_counts, objects.visit_counts)
    used = arrays.tree.node_visits > 0
    states = used & arrays.embeddings.is_decision_node
    got = np.array([[x if x is not None else 0 for x in row] for row in objects.embeddings.state])
    np.testing.assert_array_equal(got[states], arrays.embeddings.state[states])


def test_torch_embeddings_give_the_same_search():
    torch = pytest.importorskip("torch")
    record, _ = load(RECORD)
    decision_fn, chance_fn = table_functions(record)

    def as_tensors(fn):
        def wrapped(embedding, index):
            assert isinstance(embedding, torch.Tensor) and isinstance(index, torch.Tensor)
            output, new = fn(embedding[:, 0].numpy(), index.numpy())
            return output, torch.from_numpy(np.asarray(new, np.int64))[:, None]

        return wrapped

    root = _small_root(record)
    as_tensor = root._replace(embedding=torch.from_numpy(root.embedding.astype(np.int64))[:, None])
    arrays = _run(record, root, seed=3)
    tensors = _run(record, as_tensor, as_tensors(decision_fn), as_tensors(chance_fn), seed=3)
    np.testing.assert_array_equal(arrays.tree.parents, tensors.tree.parents)
    used = arrays.tree.node_visits > 0
    chance_nodes = used & ~arrays.embeddings.is_decision_node
    np.testing.assert_array_equal(
        tensors.embeddings.afterstate[..., 0].numpy()[chance_nodes],
        arrays.embeddings.afterstate[chance_nodes],
    )


def test_interior_legal_masks_keep_illegal_actions_unvisited():
    record, _ = load(RECORD)
    _, chance_fn = table_functions(record)
    num_actions = record["prior_logits"].shape[1]
    only_first_two = np.zeros(num_actions, np.bool_)
    only_first_two[:2] = True

    def masked_chance_fn(after, code):
        step, state = chance_fn(after, code)
        return step._replace(legal=np.tile(only_first_two, (len(state), 1))), state

    out = _run(record, chance_fn=masked_chance_fn, num_simulations=60)
    tree = out.tree
    interior_states = (tree.node_visits > 0) & out.embeddings.is_decision_node
    interior_states[:, 0] = False
    assert interior_states.any()
    visits = tree.children_visits[interior_states][:, 2:num_actions]
    assert visits.sum() == 0


@pytest.mark.parametrize(
    "qtransform",
    [search.qtransform_tree_min_max(), search.qtransform_tree_min_max(unvisited="min")],
    ids=["tree_min_max_parent_mean", "tree_min_max_min"],
)
def test_efficientzero_qtransform_gives_a_valid_search(qtransform):
    record, _ = load(PATHS[10])  # two players: the parent mean flips on chance edges
    out = _run(record, num_simulations=30, qtransform=qtransform)
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), 30)
    np.testing.assert_allclose(out.action_weights.sum(axis=1), 1.0, rtol=1e-6)
    assert (out.tree.node_depth[out.tree.node_visits > 0] >= 2).any()


def test_two_player_sign_flips_on_chance_edges_only():
    """A decision edge keeps the view (discount 1); a chance edge with discount -1 flips it."""
    record, _ = load(PATHS[10])  # 2p: discount -1 on every chance edge
    out = _run(record, num_simulations=30, dirichlet_fraction=0.0)
    tree = out.tree
    decision_edges = out.embeddings.is_decision_node[:, :, None] & (tree.children_index >= 0)
    np.testing.assert_array_equal(tree.children_discounts[decision_edges], 1.0)
    chance_edges = ~out.embeddings.is_decision_node[:, :, None] & (tree.children_index >= 0)
    np.testing.assert_array_equal(tree.children_discounts[chance_edges], -1.0)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("num_simulations", [0, -1, 2.5])
def test_num_simulations_must_be_a_positive_integer(num_simulations):
    record, _ = load(RECORD)
    with pytest.raises(
        ValueError,
        match=re.escape(f"num_simulations must be a positive integer; got {num_simulations!r}"),
    ):
        _run(record, num_simulations=num_simulations)


@pytest.mark.parametrize("num_codes", [0, -2])
def test_num_chance_outcomes_must_be_a_positive_integer(num_codes):
    record, _ = load(RECORD)
    with pytest.raises(
        ValueError,
        match=re.escape(f"num_chance_outcomes must be a positive integer; got {num_codes}"),
    ):
        _run(record, num_chance_outcomes=num_codes)


def test_chance_logits_of_another_width_than_num_chance_outcomes():
    record, _ = load(RECORD)
    batch, codes = len(record["root_state"]), record["chance_logits"].shape[1]
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"AfterstateOutput.chance_logits must have shape ({batch}, {codes + 1}); got ({batch}, {codes})"
        ),
    ):
        _run(record, num_chance_outcomes=codes + 1)


def test_root_prior_logits_of_wrong_shape():
    record, _ = load(RECORD)
    root = _small_root(record)
    with pytest.raises(ValueError, match=re.escape("root.value must have shape")):
        _run(record, root._replace(value=root.value[:-1]))


def test_decision_fn_must_return_an_afterstate_output():
    record, _ = load(RECORD)
    decision_fn, _ = table_functions(record)

    def returns_a_step(state, action):
        output, after = decision_fn(state, action)
        return search.StepOutput(0.0, 1.0, output.chance_logits, output.value), after

    with pytest.raises(
        TypeError, match=re.escape("decision_fn must return a pair (search.AfterstateOutput")
    ):
        _run(record, decision_fn=returns_a_step)


def test_non_finite_afterstate_value_blames_the_decision_function():
    record, _ = load(RECORD)
    decision_fn, _ = table_functions(record)

    def nan_value(state, action):
        output, after = decision_fn(state, action)
        value = np.array(output.value, np.float32)
        value[1] = np.nan
        return output._replace(value=value), after

    with pytest.raises(
        ValueError,
        match=re.escape(
            "decision_fn returned a NaN or infinite value at simulation 0 for roots [1]"
        ),
    ):
        _run(record, decision_fn=nan_value)


def test_gumbels_qtransform_is_refused_with_the_alternatives():
    record, _ = load(RECORD)
    with pytest.raises(ValueError, match="qtransform_by_parent_and_siblings"):
        _run(record, qtransform=search.qtransform_completed_by_mix_value())


# ----------------------------------------------------------------------------- Gumbel


@pytest.mark.parametrize("qtransform", [None, search.qtransform_by_parent_and_siblings()])
def test_stochastic_gumbel_policy_gives_a_valid_improved_policy(qtransform):
    record, cfg = load(PATHS[8])  # 008_invalid: random invalid root actions
    states = record["root_state"]
    legal = ~record["root_invalid"]
    root = search.RootOutput(record["prior_logits"][states], record["value"][states], states)
    decision_fn, chance_fn = table_functions(record)
    out = search.stochastic_gumbel_muzero_policy(
        root,
        decision_fn,
        chance_fn,
        num_simulations=40,
        num_chance_outcomes=cfg["num_chance_outcomes"],
        legal_mask=legal,
        max_num_considered_actions=4,
        qtransform=qtransform,
        seed=5,
    )
    rows = np.arange(len(states))
    assert legal[rows, out.action].all()
    np.testing.assert_allclose(out.action_weights.sum(axis=1), 1.0, rtol=1e-6)
    assert (out.action_weights[~legal] == 0).all()
    assert (out.visit_counts[~legal] == 0).all()
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), 40)
    # Sequential halving visits exactly min(m, legal actions) root actions, and plays one of
    # the most visited.
    np.testing.assert_array_equal((out.visit_counts > 0).sum(axis=1), np.minimum(4, legal.sum(1)))
    assert (out.visit_counts[rows, out.action] == out.visit_counts.max(axis=1)).all()
    # Below the root, chance nodes and interior decision nodes were searched.
    assert (~out.embeddings.is_decision_node & (out.tree.node_visits > 0)).any()
    assert (out.tree.node_depth[out.embeddings.is_decision_node] >= 2).any()


def test_stochastic_gumbel_policy_is_deterministic_for_a_fixed_seed():
    record, cfg = load(RECORD)
    states = record["root_state"]
    root = search.RootOutput(record["prior_logits"][states], record["value"][states], states)
    decision_fn, chance_fn = table_functions(record)

    def run(seed):
        return search.stochastic_gumbel_muzero_policy(
            root,
            decision_fn,
            chance_fn,
            num_simulations=20,
            num_chance_outcomes=cfg["num_chance_outcomes"],
            seed=seed,
        )

    first, second = run(1), run(1)
    np.testing.assert_array_equal(first.action, second.action)
    np.testing.assert_array_equal(first.action_weights, second.action_weights)
    np.testing.assert_array_equal(first.tree.parents, second.tree.parents)


def test_state_embedding_of_wrong_shape_blames_the_chance_function():
    record, _ = load(RECORD)
    _, chance_fn = table_functions(record)

    def wide_state(after, code):
        step, state = chance_fn(after, code)
        return step, np.stack([state, state], axis=1)

    with pytest.raises(ValueError, match=re.escape("chance_fn returned an embedding of shape")):
        _run(record, chance_fn=wide_state)
