"""Properties of both policies on random table MDPs (hypothesis), and the embedding kinds.

Every example is a seeded table MDP from `tests.search.problems`; the strategies vary the batch
size, actions, simulations, root and interior legal masks, the Q transform and max_depth.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import search
from tests.search.problems import (
    TableProblem,
    make_problem,
    object_recurrent_fn,
    object_roots,
    path_actions,
    root_legal_mask,
    root_output,
    table_recurrent_fn,
    used_nodes,
)

QTRANSFORMS = {
    "muzero": [
        search.qtransform_by_parent_and_siblings(),
        search.qtransform_by_min_max(min_value=-3.0, max_value=3.0),
        search.qtransform_tree_min_max(),
        search.qtransform_tree_min_max(unvisited="min", floor=0.1),
    ],
    "gumbel": [
        search.qtransform_completed_by_mix_value(),
        search.qtransform_completed_by_mix_value(use_mixed_value=False, rescale_values=False),
        search.qtransform_by_parent_and_siblings(),
    ],
}


class Case(NamedTuple):
    """One search configuration; the MDP is rebuilt from ``problem_seed``."""

    policy: str
    batch_size: int
    num_actions: int
    num_simulations: int
    problem_seed: int
    seed: int
    root_mask: bool
    interior_legal: bool
    qtransform: search.QTransform
    max_depth: int | None
    max_num_considered_actions: int
    temperature: float
    dirichlet_legal_only: bool

    @property
    def problem(self) -> TableProblem:
        return make_problem(self.problem_seed, self.batch_size, self.num_actions)


@st.composite
def cases(draw, policies=("muzero", "gumbel"), interior_legal=None, max_depth=None, min_batch=1):
    policy = draw(st.sampled_from(policies))
    return Case(
        policy=policy,
        batch_size=draw(st.integers(min_batch, 8)),
        num_actions=draw(st.integers(2, 10)),
        num_simulations=draw(st.integers(1, 40)),
        problem_seed=draw(st.integers(0, 2**32 - 1)),
        seed=draw(st.integers(0, 2**63 - 1)),
        root_mask=draw(st.booleans()) if interior_legal is None else True,
        interior_legal=draw(st.booleans()) if interior_legal is None else interior_legal,
        qtransform=draw(st.sampled_from(QTRANSFORMS[policy])),
        max_depth=draw(max_depth if max_depth is not None else st.none() | st.integers(1, 5)),
        max_num_considered_actions=draw(st.integers(1, 12)),
        temperature=draw(st.sampled_from([1.0, 0.5, 2.0, 0.25])),
        dirichlet_legal_only=draw(st.booleans()),
    )


def run(
    case: Case,
    problem: TableProblem | None = None,
    *,
    embedding=None,
    recurrent_fn=None,
    **overrides,
):
    """Runs ``case`` (its own MDP unless ``problem`` is given) with noise on unless overridden."""
    problem = case.problem if problem is None else problem
    recurrent_fn = recurrent_fn or table_recurrent_fn(problem, interior_legal=case.interior_legal)
    kwargs = dict(
        num_simulations=case.num_simulations,
        legal_mask=root_legal_mask(problem) if case.root_mask else None,
        max_depth=case.max_depth,
        seed=case.seed,
        qtransform=case.qtransform,
    )
    if case.policy == "muzero":
        kwargs.update(temperature=case.temperature, dirichlet_legal_only=case.dirichlet_legal_only)
        policy = search.muzero_policy
    else:
        kwargs.update(max_num_considered_actions=case.max_num_considered_actions)
        policy = search.gumbel_muzero_policy
    kwargs.update(overrides)
    return policy(root_output(problem, embedding), recurrent_fn, **kwargs)


def mask_of(case: Case, problem: TableProblem) -> np.ndarray:
    if case.root_mask:
        return root_legal_mask(problem)
    return np.ones((problem.batch_size, problem.num_actions), bool)


def assert_same_output(out: search.SearchOutput, expected: search.SearchOutput) -> None:
    """Every field equal, the tree included; embeddings compared on used nodes only."""
    for name in ("action", "action_weights", "root_value", "visit_counts", "qvalues"):
        np.testing.assert_array_equal(getattr(out, name), getattr(expected, name), err_msg=name)
    for name in search.Tree._fields:
        np.testing.assert_array_equal(
            getattr(out.tree, name), getattr(expected.tree, name), err_msg=name
        )
    used = used_nodes(out.tree)
    np.testing.assert_array_equal(out.embeddings[used], expected.embeddings[used])


# ----------------------------------------------------------------------------- visit counts


@given(cases())
def test_root_visits_sum_to_num_simulations(case):
    out = run(case)
    tree, n = out.tree, case.num_simulations
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), n)
    np.testing.assert_array_equal(tree.node_visits[:, search.ROOT_INDEX], n + 1)
    np.testing.assert_array_equal(out.visit_counts, tree.children_visits[:, search.ROOT_INDEX])
    if case.policy == "muzero":
        np.testing.assert_allclose(out.action_weights, out.visit_counts / n, rtol=1e-6)


@given(cases())
def test_tree_links_and_visits_are_consistent(case):
    tree = run(case).tree
    used = used_nodes(tree)
    np.testing.assert_array_equal(tree.node_visits[~used], 0)
    child_visits = tree.children_visits.sum(axis=2)
    # A node is visited once per evaluation (more than once only when re-evaluated at max_depth).
    assert (tree.node_visits[used] >= 1 + child_visits[used]).all()
    if case.max_depth is None:
        np.testing.assert_array_equal(tree.node_visits[used], 1 + child_visits[used])
    for b, node in zip(*np.nonzero(used), strict=True):
        if node == search.ROOT_INDEX:
            continue
        parent, action = tree.parents[b, node], tree.action_from_parent[b, node]
        assert tree.children_index[b, parent, action] == node
        assert tree.children_visits[b, parent, action] == tree.node_visits[b, node]
        assert tree.node_depth[b, node] == tree.node_depth[b, parent] + 1


# ----------------------------------------------------------------------------- legal masks


@given(cases())
def test_illegal_root_action_is_never_selected(case):
    problem = case.problem
    out = run(case, problem)
    legal = mask_of(case, problem)
    np.testing.assert_array_equal(out.visit_counts[~legal], 0)
    np.testing.assert_array_equal(out.action_weights[~legal], 0.0)
    np.testing.assert_array_equal(
        out.tree.children_index[:, search.ROOT_INDEX][~legal], search.UNVISITED
    )
    assert legal[np.arange(problem.batch_size), out.action].all()
    if case.policy == "muzero":  # temperature <= 2: an unvisited action has weight ~tiny**0.5
        assert (out.visit_counts[np.arange(problem.batch_size), out.action] > 0).all()


@given(cases(interior_legal=True))
def test_no_child_along_an_illegal_edge_with_interior_masks(case):
    problem = case.problem
    out = run(case, problem)
    tree, states = out.tree, out.embeddings
    root_legal = mask_of(case, problem)
    used = used_nodes(tree)
    for b, node in zip(*np.nonzero(used), strict=True):
        legal = root_legal[b] if node == search.ROOT_INDEX else problem.legal[states[b, node]]
        np.testing.assert_array_equal(tree.children_legal[b, node], legal)
        assert (tree.children_index[b, node][~legal] == search.UNVISITED).all()
        assert (tree.children_visits[b, node][~legal] == 0).all()
        if node != search.ROOT_INDEX:
            parent, action = tree.parents[b, node], tree.action_from_parent[b, node]
            parent_legal = (
                root_legal[b] if parent == search.ROOT_INDEX else problem.legal[states[b, parent]]
            )
            assert parent_legal[action], (b, node, parent, action)
            assert problem.next_state[states[b, parent], action] == states[b, node]


@given(cases(policies=("gumbel",)))
def test_gumbel_action_weights_are_a_distribution_over_legal_actions(case):
    problem = case.problem
    out = run(case, problem)
    legal = mask_of(case, problem)
    weights = out.action_weights
    assert (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(weights[~legal], 0.0)
    rows = np.arange(problem.batch_size)
    assert legal[rows, out.action].all()
    # The chosen action is among the most visited; at most m actions were ever considered.
    np.testing.assert_array_equal(out.visit_counts[rows, out.action], out.visit_counts.max(axis=1))
    considered = np.minimum(case.max_num_considered_actions, legal.sum(axis=1))
    assert ((out.visit_counts > 0).sum(axis=1) <= considered).all()


# ----------------------------------------------------------------------------- randomness


@given(cases())
def test_same_seed_gives_identical_outputs_with_noise_on(case):
    problem = case.problem
    out = run(case, problem)
    assert_same_output(run(case, problem), out)
    other = run(case, problem, seed=case.seed ^ 0x5DEECE66D)
    if case.policy == "gumbel":
        assert not np.array_equal(other.tree.root_gumbel, out.tree.root_gumbel)
    elif (mask_of(case, problem).sum(axis=1) >= 2).any():  # noise shows with >= 2 legal actions
        root_probs = out.tree.children_prior_probs[:, search.ROOT_INDEX]
        assert not np.array_equal(other.tree.children_prior_probs[:, search.ROOT_INDEX], root_probs)


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
@pytest.mark.parametrize("seed", [0, 1, 12345, 2**63 + 17, -5])
def test_int_seed_wraps_without_numpy_overflow_warnings(policy, seed):
    """Key derivation is modular arithmetic on purpose; it must not warn (or fail under -W error)."""
    case = Case(
        policy=policy,
        batch_size=3,
        num_actions=4,
        num_simulations=5,
        problem_seed=1,
        seed=seed,
        root_mask=False,
        interior_legal=False,
        qtransform=QTRANSFORMS[policy][0],
        max_depth=None,
        max_num_considered_actions=4,
        temperature=1.0,
        dirichlet_legal_only=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run(case)
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), 5)


@st.composite
def layouts(draw):
    """A case with per-root keys and a new batch layout: rows of it permuted/subset/duplicated."""
    case = draw(cases(max_depth=st.none() | st.integers(2, 6)))
    rows = draw(st.lists(st.integers(0, case.batch_size - 1), min_size=1, max_size=10))
    return case, rows


@given(layouts())
def test_root_result_does_not_depend_on_batch_layout(layout):
    case, rows = layout
    problem = case.problem
    keys = np.random.default_rng(case.seed).integers(0, 2**63, problem.batch_size, dtype=np.uint64)
    out = run(case, problem.with_roots(rows), seed=keys[rows])
    for j, row in enumerate(rows):
        single = run(case, problem.with_roots([row]), seed=keys[[row]])
        np.testing.assert_array_equal(out.visit_counts[j], single.visit_counts[0])
        assert out.action[j] == single.action[0]
        np.testing.assert_allclose(out.action_weights[j], single.action_weights[0], atol=1e-6)
        np.testing.assert_allclose(out.root_value[j], single.root_value[0], atol=1e-6)
        np.testing.assert_allclose(out.qvalues[j], single.qvalues[0], atol=1e-6)
        np.testing.assert_array_equal(out.tree.node_visits[j], single.tree.node_visits[0])


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
def test_large_batch_parallel_kernels_match_single_root_runs(policy):
    """From 64 roots on the kernels run in parallel; every root still gets its own result."""
    case = Case(
        policy=policy,
        batch_size=3,
        num_actions=5,
        num_simulations=12,
        problem_seed=7,
        seed=0,
        root_mask=True,
        interior_legal=True,
        qtransform=QTRANSFORMS[policy][0],
        max_depth=None,
        max_num_considered_actions=4,
        temperature=1.0,
        dirichlet_legal_only=False,
    )
    problem = case.problem
    assert problem.batch_size * 22 >= search.search.PARALLEL_MIN_BATCH
    keys = np.array([11, 2**40 + 3, 2**63 + 5], np.uint64)
    rows = np.tile(np.arange(problem.batch_size), 22)
    out = run(case, problem.with_roots(rows), seed=keys[rows])
    singles = [
        run(case, problem.with_roots([row]), seed=keys[[row]]) for row in range(problem.batch_size)
    ]
    for j, row in enumerate(rows):
        np.testing.assert_array_equal(out.visit_counts[j], singles[row].visit_counts[0])
        assert out.action[j] == singles[row].action[0]
        np.testing.assert_allclose(out.action_weights[j], singles[row].action_weights[0], atol=1e-6)


@given(cases())
def test_deterministic_ignores_the_seed(case):
    problem = case.problem
    out = run(case, problem, deterministic=True)
    assert_same_output(run(case, problem, deterministic=True, seed=case.seed + 1), out)
    rows = np.arange(problem.batch_size)
    if case.policy == "muzero":
        np.testing.assert_array_equal(out.action, np.argmax(out.visit_counts, axis=1))
        # No Dirichlet noise: the root prior is the model's (masked) softmax.
        logits = np.where(
            mask_of(case, problem), problem.prior_logits[problem.root_states], -np.inf
        )
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        np.testing.assert_allclose(
            out.tree.children_prior_probs[:, search.ROOT_INDEX],
            probs / probs.sum(axis=1, keepdims=True),
            atol=1e-6,
        )
    else:
        np.testing.assert_array_equal(out.tree.root_gumbel, 0.0)
        np.testing.assert_array_equal(
            out.visit_counts[rows, out.action], out.visit_counts.max(axis=1)
        )


@given(cases(policies=("muzero",)))
def test_muzero_temperature_zero_plays_the_most_visited_action(case):
    out = run(case, temperature=0.0)
    np.testing.assert_array_equal(out.action, np.argmax(out.visit_counts, axis=1))


# ----------------------------------------------------------------------------- max_depth


@given(cases(max_depth=st.integers(1, 4)))
def test_max_depth_is_respected(case):
    tree = run(case).tree
    used = used_nodes(tree)
    assert (tree.node_depth[used] <= case.max_depth).all()
    np.testing.assert_array_equal(
        tree.children_visits.sum(axis=2)[:, search.ROOT_INDEX], case.num_simulations
    )


# ----------------------------------------------------------------------------- embeddings


class TinyModel(torch.nn.Module):
    """A deterministic toy MuZero: dynamics, reward, policy and value heads on an 8-d state."""

    def __init__(self, num_actions: int = 4, embedding_dim: int = 8):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.num_actions = num_actions
        self.dynamics = torch.nn.Linear(embedding_dim + num_actions, embedding_dim)
        self.reward = torch.nn.Linear(embedding_dim, 1)
        self.policy = torch.nn.Linear(embedding_dim, num_actions)
        self.value = torch.nn.Linear(embedding_dim, 1)
        with torch.no_grad():
            for parameter in self.parameters():
                parameter.copy_(torch.randn(parameter.shape, generator=generator))

    @torch.no_grad()
    def step(self, embedding: torch.Tensor, action: torch.Tensor):
        one_hot = torch.nn.functional.one_hot(action, self.num_actions).to(embedding.dtype)
        next_embedding = torch.tanh(self.dynamics(torch.cat([embedding, one_hot], dim=-1)))
        return next_embedding, torch.tanh(self.reward(embedding)).squeeze(-1)

    @torch.no_grad()
    def predict(self, embedding: torch.Tensor):
        return self.policy(embedding), torch.tanh(self.value(embedding)).squeeze(-1)


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
@pytest.mark.parametrize(("batch_size", "num_simulations"), [(1, 7), (3, 20)])
def test_torch_embeddings_are_stored_per_node(policy, batch_size, num_simulations):
    model = TinyModel()
    calls = []

    def recurrent_fn(embedding, action):
        assert isinstance(embedding, torch.Tensor) and embedding.shape == (batch_size, 8)
        assert isinstance(action, torch.Tensor) and action.dtype == torch.long
        calls.append(1)
        next_embedding, reward = model.step(embedding, action)
        logits, value = model.predict(next_embedding)
        step = search.StepOutput(reward, torch.full((batch_size,), 0.95), logits, value)
        return step, next_embedding

    root_embedding = torch.randn(batch_size, 8, generator=torch.Generator().manual_seed(1))
    logits, value = model.predict(root_embedding)
    root = search.RootOutput(logits, value, root_embedding)
    policy_fn = search.muzero_policy if policy == "muzero" else search.gumbel_muzero_policy
    out = policy_fn(root, recurrent_fn, num_simulations=num_simulations, seed=3)

    assert len(calls) == num_simulations
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), num_simulations)
    assert isinstance(out.embeddings, torch.Tensor)
    assert out.embeddings.shape == (batch_size, num_simulations + 1, 8)
    torch.testing.assert_close(out.embeddings[:, 0], root_embedding, rtol=0, atol=0)
    tree = out.tree
    for b, node in zip(*np.nonzero(used_nodes(tree)), strict=True):
        embedding = root_embedding[b : b + 1]
        for action in path_actions(tree, b, node):
            embedding, _ = model.step(embedding, torch.tensor([action]))
        torch.testing.assert_close(out.embeddings[b, node], embedding[0], rtol=1e-4, atol=1e-5)
        _, node_value = model.predict(embedding)
        np.testing.assert_allclose(
            tree.raw_values[b, node], node_value.item(), rtol=1e-4, atol=1e-5
        )


@given(cases())
def test_object_embeddings_give_the_same_search_as_state_ids(case):
    problem = case.problem
    expected = run(case, problem)
    out = run(
        case,
        problem,
        embedding=object_roots(problem),
        recurrent_fn=object_recurrent_fn(problem, interior_legal=case.interior_legal),
    )
    for name in ("action", "action_weights", "root_value", "visit_counts", "qvalues"):
        np.testing.assert_array_equal(getattr(out, name), getattr(expected, name), err_msg=name)
    for name in search.Tree._fields:
        np.testing.assert_array_equal(
            getattr(out.tree, name), getattr(expected.tree, name), err_msg=name
        )
    assert isinstance(out.embeddings, list) and len(out.embeddings) == problem.batch_size
    used = used_nodes(out.tree)
    for b in range(problem.batch_size):
        row = out.embeddings[b]
        assert len(row) == case.num_simulations + 1
        for node in range(case.num_simulations + 1):
            if not used[b, node]:
                assert row[node] is None
                continue
            assert row[node].state_id == expected.embeddings[b, node]
            assert list(row[node].history) == path_actions(out.tree, b, node)


def test_a_numpy_generator_seeds_reproducibly():
    problem = make_problem(3, 4, 5)
    root = root_output(problem)
    outs = [
        search.muzero_policy(
            root, table_recurrent_fn(problem), num_simulations=8, seed=np.random.default_rng(7)
        )
        for _ in range(2)
    ]
    np.testing.assert_array_equal(outs[0].action, outs[1].action)
    np.testing.assert_array_equal(outs[0].visit_counts, outs[1].visit_counts)
