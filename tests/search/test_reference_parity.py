"""`search` against the slow object-per-node reference (`tests.search.reference`) on random
table MDPs: integer outputs (visits, tree structure) exactly, floats to tolerance.

Each case draws a random table MDP (seeded numpy), runs the reference root by root and
redraws the problem when some decision of the reference had a margin below `MARGIN` (such
near-ties may legitimately go either way between float32 and float64 arithmetic).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import search
from search.seq_halving import considered_visit_sequence
from tests.search import reference as ref

MARGIN = 1e-6
MAX_ATTEMPTS = 20
TOL = dict(rtol=1e-4, atol=1e-5)
SEEDS = (0, 1)

# ----------------------------------------------------------------------------- problems

DISCOUNTS = {
    "gamma": lambda rng, shape: np.full(shape, 0.997),
    "one": lambda rng, shape: np.ones(shape),
    "two_player": lambda rng, shape: np.full(shape, -1.0),
    "terminal": lambda rng, shape: np.where(rng.random(shape) < 0.25, 0.0, 0.997),
    "two_player_terminal": lambda rng, shape: np.where(rng.random(shape) < 0.25, 0.0, -1.0),
    "mixed": lambda rng, shape: rng.choice([0.997, 1.0, -1.0, 0.0], size=shape),
}


def random_mask(rng, shape, p_legal=0.6):
    """Bool mask with at least one legal action per row."""
    mask = rng.random(shape) < p_legal
    rows = np.nonzero(~mask.any(axis=-1))[0]
    mask[rows, rng.integers(shape[-1], size=rows.size)] = True
    return mask


PATH_MODULUS = 2**31 - 1
REEVALUATION_DRIFT = 0.25


@dataclasses.dataclass
class TableMDP:
    """A random table MDP. A node's embedding is ``(state, accumulated, path)``: its state id,
    the value prefix accumulated since the last reset (a stand-in for EfficientZero's reward
    LSTM state; unused with plain rewards) and a hash of the path from its root.

    The model is deterministic except for re-evaluations (``max_depth``): the n-th evaluation
    of the same path adds ``n * REEVALUATION_DRIFT`` to the value and the reward, so that a
    re-evaluated node visibly takes the new output (as a stochastic model would).
    """

    next_state: np.ndarray  # [S, A] int
    reward: np.ndarray  # [S, A] float32
    discount: np.ndarray  # [S, A] float32
    prior_logits: np.ndarray  # [S, A] float32
    value: np.ndarray  # [S] float32
    legal: np.ndarray | None  # [S, A] bool, or None = every action legal

    def recurrent_fn(self, value_prefix: bool):
        """A fresh batched recurrent function for `search` (the reference calls it with B = 1)."""
        evaluations: dict[int, int] = {}

        def recurrent_fn(embedding, action, is_reset=None):
            state, accumulated, path = embedding
            action = np.asarray(action)
            next_state = self.next_state[state, action]
            next_path = (path * 1_000_003 + action + 1) % PATH_MODULUS
            drift = []
            for tag in next_path.tolist():
                drift.append(REEVALUATION_DRIFT * evaluations.get(tag, 0))
                evaluations[tag] = evaluations.get(tag, 0) + 1
            drift = np.asarray(drift, np.float32)
            reward = (self.reward[state, action] + drift).astype(np.float32)
            if value_prefix:
                reward = (accumulated + reward).astype(np.float32)
                # A reset node starts a new horizon: its children accumulate from zero.
                accumulated = np.where(is_reset, 0.0, reward).astype(np.float32)
            out = search.StepOutput(
                reward=reward,
                discount=self.discount[state, action],
                prior_logits=self.prior_logits[next_state],
                value=(self.value[next_state] + drift).astype(np.float32),
                legal=None if self.legal is None else self.legal[next_state],
            )
            return out, (next_state, accumulated, next_path)

        if value_prefix:
            return recurrent_fn
        return lambda embedding, action: recurrent_fn(embedding, action)

    def root_embedding(self, states, rows):
        """Embeddings of the roots ``states`` ``[B]`` sitting at batch rows ``rows`` ``[B]``."""
        states = np.asarray(states, np.int32)
        return (states, np.zeros(states.shape, np.float32), np.asarray(rows, np.int64) + 1)

    def reference_model(self, value_prefix: bool):
        """The same function for one root: the reference's ``model(embedding, action, is_reset)``."""
        fn = self.recurrent_fn(value_prefix)

        def model(embedding, action, is_reset):
            args = (embedding, np.array([action], np.int32))
            if value_prefix:
                args += (np.array([is_reset]),)
            out, new_embedding = fn(*args)
            step = ref.Transition(
                reward=float(out.reward[0]),
                discount=float(out.discount[0]),
                prior_logits=np.asarray(out.prior_logits[0], np.float64),
                value=float(out.value[0]),
                legal=None if out.legal is None else out.legal[0],
            )
            return step, new_embedding

        return model


def make_mdp(rng, num_states, num_actions, discounts, interior_legal) -> TableMDP:
    shape = (num_states, num_actions)
    return TableMDP(
        next_state=rng.integers(num_states, size=shape),
        reward=rng.normal(0.0, 0.5, size=shape).astype(np.float32),
        discount=DISCOUNTS[discounts](rng, shape).astype(np.float32),
        prior_logits=rng.normal(0.0, 1.5, size=shape).astype(np.float32),
        value=rng.uniform(-1.0, 1.0, size=num_states).astype(np.float32),
        legal=random_mask(rng, shape) if interior_legal else None,
    )


# ----------------------------------------------------------------------------- cases

QTRANSFORMS = {
    "siblings": (search.qtransform_by_parent_and_siblings, ref.ParentAndSiblings, {}),
    "min_max": (search.qtransform_by_min_max, ref.MinMax, dict(min_value=-2.0, max_value=2.0)),
    "tree_mean": (search.qtransform_tree_min_max, ref.TreeMinMax, dict(unvisited="parent_mean")),
    "tree_min": (search.qtransform_tree_min_max, ref.TreeMinMax, dict(unvisited="min")),
    "tree_mean_floor": (
        search.qtransform_tree_min_max,
        ref.TreeMinMax,
        dict(floor=0.5, unvisited="parent_mean"),
    ),
    "completed": (search.qtransform_completed_by_mix_value, ref.CompletedByMixValue, {}),
    "completed_raw": (
        search.qtransform_completed_by_mix_value,
        ref.CompletedByMixValue,
        dict(use_mixed_value=False),
    ),
    "completed_unscaled": (
        search.qtransform_completed_by_mix_value,
        ref.CompletedByMixValue,
        dict(rescale_values=False, value_scale=0.05, maxvisit_init=10.0),
    ),
}


@dataclasses.dataclass(frozen=True)
class Case:
    policy: str = "muzero"  # or "gumbel"
    qtransform: str = "siblings"
    discounts: str = "gamma"
    num_simulations: int = 40
    num_actions: int = 5
    num_states: int = 12
    batch_size: int = 3
    max_depth: int | None = None
    interior_legal: bool = False
    root_legal: bool = False
    horizon: int | None = None  # value prefix
    max_num_considered_actions: int = 16
    noise: bool = True  # muzero: sampled action (+ Dirichlet below); gumbel: injected Gumbel
    dirichlet: bool = False
    temperature: float = 1.0

    @property
    def value_prefix(self):
        return self.horizon is not None


@dataclasses.dataclass
class Problem:
    mdp: TableMDP
    root_states: np.ndarray  # [B]
    root_legal: np.ndarray | None  # [B, A]
    gumbel: np.ndarray  # [B, A] float32 (root Gumbel or action-sampling Gumbel)
    dirichlet: np.ndarray  # [B, A] float32


def make_problem(case: Case, rng) -> Problem:
    mdp = make_mdp(rng, case.num_states, case.num_actions, case.discounts, case.interior_legal)
    shape = (case.batch_size, case.num_actions)
    return Problem(
        mdp=mdp,
        root_states=rng.integers(case.num_states, size=case.batch_size).astype(np.int32),
        root_legal=random_mask(rng, shape, 0.7) if case.root_legal else None,
        gumbel=rng.gumbel(size=shape).astype(np.float32),
        dirichlet=rng.dirichlet(np.full(case.num_actions, 0.3), size=case.batch_size).astype(
            np.float32
        ),
    )


def run_search(case: Case, problem: Problem) -> search.SearchOutput:
    build, _, kwargs = QTRANSFORMS[case.qtransform]
    mdp, states = problem.mdp, problem.root_states
    root = search.RootOutput(
        mdp.prior_logits[states],
        mdp.value[states],
        mdp.root_embedding(states, np.arange(case.batch_size)),
    )
    common = dict(
        num_simulations=case.num_simulations,
        legal_mask=problem.root_legal,
        max_depth=case.max_depth,
        qtransform=build(**kwargs),
        value_prefix_horizon=case.horizon,
    )
    recurrent_fn = mdp.recurrent_fn(case.value_prefix)
    if case.policy == "gumbel":
        if case.noise:
            return search.gumbel_muzero_policy(
                root,
                recurrent_fn,
                gumbel=problem.gumbel,
                max_num_considered_actions=case.max_num_considered_actions,
                **common,
            )
        return search.gumbel_muzero_policy(
            root,
            recurrent_fn,
            deterministic=True,
            max_num_considered_actions=case.max_num_considered_actions,
            **common,
        )
    if not case.noise:
        return search.muzero_policy(root, recurrent_fn, deterministic=True, **common)
    return search.muzero_policy(
        root,
        recurrent_fn,
        dirichlet_fraction=0.25 if case.dirichlet else 0.0,
        dirichlet_noise=problem.dirichlet if case.dirichlet else None,
        action_gumbel=problem.gumbel,
        temperature=case.temperature,
        **common,
    )


def run_reference(case: Case, problem: Problem, b: int) -> ref.Result:
    _, build, kwargs = QTRANSFORMS[case.qtransform]
    mdp, state = problem.mdp, problem.root_states[b]
    embedding = mdp.root_embedding(problem.root_states[b : b + 1], [b])
    common = dict(
        num_simulations=case.num_simulations,
        legal_mask=None if problem.root_legal is None else problem.root_legal[b],
        qtransform=build(**kwargs),
        max_depth=case.max_depth,
        value_prefix_horizon=case.horizon,
    )
    args = (
        mdp.reference_model(case.value_prefix),
        mdp.prior_logits[state],
        mdp.value[state],
        embedding,
    )
    if case.policy == "gumbel":
        gumbel = problem.gumbel[b] if case.noise else np.zeros(case.num_actions)
        return ref.run_gumbel(
            *args,
            gumbel=gumbel,
            max_num_considered_actions=case.max_num_considered_actions,
            **common,
        )
    if not case.noise:
        return ref.run_muzero(*args, **common)
    return ref.run_muzero(
        *args,
        dirichlet_fraction=0.25 if case.dirichlet else 0.0,
        dirichlet_noise=problem.dirichlet[b],
        action_gumbel=problem.gumbel[b],
        temperature=case.temperature,
        **common,
    )


def decisive_problem(case: Case, seed: int) -> tuple[Problem, list[ref.Result]]:
    """The first problem drawn from ``seed`` whose reference decisions all have margin >= MARGIN."""
    for attempt in range(MAX_ATTEMPTS):
        problem = make_problem(case, np.random.default_rng([seed, attempt]))
        results = [run_reference(case, problem, b) for b in range(case.batch_size)]
        if min(r.min_margin for r in results) >= MARGIN:
            return problem, results
    pytest.fail(f"no problem without near-ties in {MAX_ATTEMPTS} draws")


# ----------------------------------------------------------------------------- comparison

EXACT = (
    "node_visits",
    "parents",
    "action_from_parent",
    "node_depth",
    "children_index",
    "children_visits",
    "is_reset",
    "children_legal",
)
CLOSE = (
    "node_values",
    "raw_values",
    "children_values",
    "children_rewards",
    "children_discounts",
    "children_prior_probs",
    "value_prefix",
)


def assert_matches(out: search.SearchOutput, results: list[ref.Result], case: Case):
    for b, expected in enumerate(results):
        arrays = expected.arrays()
        where = f"root {b} of {case}"
        for key in EXACT:
            np.testing.assert_array_equal(
                getattr(out.tree, key)[b], arrays[key], err_msg=f"{key}, {where}"
            )
        for key in CLOSE:
            np.testing.assert_allclose(
                getattr(out.tree, key)[b], arrays[key], **TOL, err_msg=f"{key}, {where}"
            )
        np.testing.assert_array_equal(
            out.visit_counts[b], expected.visit_counts, err_msg=f"visit_counts, {where}"
        )
        assert out.action[b] == expected.action, f"action, {where}"
        np.testing.assert_allclose(
            out.action_weights[b],
            expected.action_weights,
            **TOL,
            err_msg=f"action_weights, {where}",
        )
        np.testing.assert_allclose(
            out.root_value[b], expected.root_value, **TOL, err_msg=f"root_value, {where}"
        )
        np.testing.assert_allclose(
            out.qvalues[b], expected.qvalues, **TOL, err_msg=f"qvalues, {where}"
        )
        np.testing.assert_allclose(
            out.tree.tree_min_max[b], expected.tree_min_max, **TOL, err_msg=f"tree_min_max, {where}"
        )


def check_case(case: Case, seed: int):
    problem, results = decisive_problem(case, seed)
    out = run_search(case, problem)
    assert_matches(out, results, case)
    return out, results


# ----------------------------------------------------------------------------- the cases

MUZERO_CASES = {
    # the four Q transforms of PUCT
    "siblings": Case(),
    "siblings_deterministic": Case(noise=False, num_actions=7),
    "siblings_two_player": Case(discounts="two_player"),
    "siblings_mixed_discounts": Case(discounts="mixed", num_actions=6),
    "min_max": Case(qtransform="min_max"),
    "min_max_two_player_terminal": Case(qtransform="min_max", discounts="two_player_terminal"),
    "tree_mean": Case(qtransform="tree_mean"),
    "tree_mean_two_player": Case(qtransform="tree_mean", discounts="two_player"),
    "tree_mean_mixed": Case(qtransform="tree_mean", discounts="mixed", num_actions=7),
    "tree_mean_floor": Case(qtransform="tree_mean_floor", discounts="terminal"),
    "tree_min": Case(qtransform="tree_min"),
    "tree_min_two_player": Case(qtransform="tree_min", discounts="two_player_terminal"),
    # terminal discounts (0)
    "siblings_terminal": Case(discounts="terminal"),
    # max_depth (re-evaluation of existing nodes at the cut-off)
    "max_depth_1": Case(max_depth=1, num_simulations=30),
    "max_depth_2": Case(max_depth=2, discounts="mixed"),
    "max_depth_3_tree_mean": Case(max_depth=3, qtransform="tree_mean", discounts="two_player"),
    "max_depth_2_min_max": Case(max_depth=2, qtransform="min_max", discounts="terminal"),
    # legal masks at the root and inside the tree
    "root_legal": Case(root_legal=True, num_actions=8),
    "interior_legal": Case(interior_legal=True, root_legal=True, num_actions=8, discounts="mixed"),
    "interior_legal_tree_mean": Case(
        interior_legal=True, root_legal=True, qtransform="tree_mean", num_actions=6
    ),
    "interior_legal_tree_min_depth": Case(interior_legal=True, qtransform="tree_min", max_depth=3),
    # injected Dirichlet noise (mctx mixing over all actions) and sampled actions
    "dirichlet": Case(dirichlet=True, root_legal=True, num_actions=7),
    "temperature_half": Case(temperature=0.5, discounts="two_player"),
    # a bigger one
    "large": Case(
        num_simulations=60,
        num_actions=9,
        num_states=30,
        batch_size=4,
        discounts="mixed",
        interior_legal=True,
    ),
    # value prefix (EfficientZero)
    "prefix_h1": Case(horizon=1, qtransform="tree_mean"),
    "prefix_h2": Case(horizon=2, qtransform="tree_mean", discounts="terminal"),
    "prefix_h3": Case(horizon=3, qtransform="tree_mean", discounts="two_player"),
    "prefix_h3_siblings": Case(horizon=3, discounts="mixed", interior_legal=True),
    "prefix_h2_min": Case(horizon=2, qtransform="tree_min", discounts="one"),
    "prefix_large": Case(horizon=1000, qtransform="tree_mean"),
    "prefix_h2_max_depth": Case(horizon=2, qtransform="tree_mean", max_depth=3),
    "prefix_h2_max_depth_2": Case(horizon=2, max_depth=2, discounts="terminal"),
}


def Gumbel(**kwargs) -> Case:
    return Case(policy="gumbel", qtransform=kwargs.pop("qtransform", "completed"), **kwargs)


GUMBEL_CASES = {
    "completed": Gumbel(),
    "completed_deterministic": Gumbel(noise=False, num_actions=7),
    "completed_two_player": Gumbel(discounts="two_player", num_actions=7),
    "completed_mixed": Gumbel(discounts="mixed", num_actions=9, num_simulations=50),
    "completed_m4": Gumbel(max_num_considered_actions=4, num_actions=9, discounts="terminal"),
    "completed_m3": Gumbel(max_num_considered_actions=3, num_actions=6, num_simulations=33),
    "completed_m2": Gumbel(max_num_considered_actions=2, num_actions=6),
    "completed_m1": Gumbel(max_num_considered_actions=1, num_actions=6, num_simulations=20),
    "raw_value": Gumbel(qtransform="completed_raw", discounts="two_player_terminal"),
    "raw_value_m4": Gumbel(qtransform="completed_raw", max_num_considered_actions=4, num_actions=8),
    "unscaled": Gumbel(qtransform="completed_unscaled", discounts="mixed"),
    "max_depth_1": Gumbel(max_depth=1, num_simulations=30, num_actions=6),
    "max_depth_2": Gumbel(max_depth=2, discounts="mixed"),
    "root_legal": Gumbel(root_legal=True, num_actions=8),
    "interior_legal": Gumbel(
        interior_legal=True, root_legal=True, num_actions=8, discounts="mixed"
    ),
    "interior_legal_m2": Gumbel(
        interior_legal=True, root_legal=True, max_num_considered_actions=2, num_actions=7
    ),
    "large": Gumbel(
        num_simulations=60,
        num_actions=9,
        num_states=30,
        batch_size=4,
        max_num_considered_actions=8,
        interior_legal=True,
    ),
    "prefix_h1": Gumbel(horizon=1),
    "prefix_h2": Gumbel(horizon=2, discounts="two_player"),
    "prefix_h3": Gumbel(horizon=3, discounts="mixed", interior_legal=True),
    "prefix_large": Gumbel(horizon=1000, qtransform="completed_raw"),
    "prefix_h2_max_depth": Gumbel(horizon=2, max_depth=3),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(MUZERO_CASES))
def test_muzero_matches_reference(name, seed):
    check_case(MUZERO_CASES[name], seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(GUMBEL_CASES))
def test_gumbel_matches_reference(name, seed):
    check_case(GUMBEL_CASES[name], seed)


# ----------------------------------------------------------------------------- value prefix


EQUIVALENCE_CASES = {
    "muzero_siblings": Case(discounts="mixed"),
    "muzero_tree_mean": Case(qtransform="tree_mean", discounts="two_player"),
    "muzero_tree_min_max_depth": Case(qtransform="tree_min", max_depth=3, discounts="terminal"),
    "muzero_legal": Case(interior_legal=True, root_legal=True, num_actions=7, discounts="mixed"),
    "gumbel": Gumbel(discounts="mixed", num_actions=7),
    "gumbel_max_depth": Gumbel(max_depth=2, discounts="two_player_terminal"),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(EQUIVALENCE_CASES))
def test_value_prefix_without_resets_equals_reward_search(name, seed):
    """Prefixes = rewards summed since the root, no reset below it (H > N): the same search."""
    plain = EQUIVALENCE_CASES[name]
    prefixed = dataclasses.replace(plain, horizon=plain.num_simulations + 1)
    problem, _ = decisive_problem(plain, seed)
    a, b = run_search(plain, problem), run_search(prefixed, problem)
    for key in (
        "node_visits",
        "parents",
        "action_from_parent",
        "node_depth",
        "children_index",
        "children_visits",
    ):
        np.testing.assert_array_equal(getattr(a.tree, key), getattr(b.tree, key), err_msg=key)
    for key in (
        "node_values",
        "raw_values",
        "children_values",
        "children_rewards",
        "children_discounts",
    ):
        np.testing.assert_allclose(
            getattr(a.tree, key), getattr(b.tree, key), rtol=1e-5, atol=1e-5, err_msg=key
        )
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    np.testing.assert_array_equal(a.action, b.action)
    for key in ("action_weights", "root_value", "qvalues"):
        np.testing.assert_allclose(
            getattr(a, key), getattr(b, key), rtol=1e-5, atol=1e-5, err_msg=key
        )
    # Only the root resets; the stored prefixes are the cumulative rewards.
    used = a.tree.node_visits > 0
    np.testing.assert_array_equal(b.tree.is_reset[used], a.tree.node_depth[used] == 0)
    # And the reference agrees with itself across the two modes.
    for root in range(plain.batch_size):
        r_plain, r_prefix = (
            run_reference(plain, problem, root),
            run_reference(prefixed, problem, root),
        )
        x, y = r_plain.arrays(), r_prefix.arrays()
        for key in ("node_visits", "parents", "action_from_parent", "children_visits"):
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)
        np.testing.assert_allclose(x["node_values"], y["node_values"], rtol=1e-5, atol=1e-5)


def test_value_prefix_edge_rewards_and_resets():
    """With H = 2 the rewards of edges below reset nodes are the child's whole prefix."""
    case = Case(horizon=2, num_simulations=40, discounts="one")
    problem, _ = decisive_problem(case, 7)
    out = run_search(case, problem)
    tree = out.tree
    for b in range(case.batch_size):
        for node in np.nonzero(tree.node_visits[b] > 0)[0][1:]:
            parent, action = tree.parents[b, node], tree.action_from_parent[b, node]
            assert tree.is_reset[b, node] == (tree.node_depth[b, node] % 2 == 0)
            expected = tree.value_prefix[b, node] - (
                0.0 if tree.is_reset[b, parent] else tree.value_prefix[b, parent]
            )
            np.testing.assert_allclose(
                tree.children_rewards[b, parent, action], expected, rtol=1e-6, atol=1e-6
            )
            # the model's edge reward, recovered from the prefixes
            state = problem.root_states[b]
            path = []
            n = node
            while n != 0:
                path.append(tree.action_from_parent[b, n])
                n = tree.parents[b, n]
            rewards = []
            for a in reversed(path):
                rewards.append(problem.mdp.reward[state, a])
                state = problem.mdp.next_state[state, a]
            np.testing.assert_allclose(
                tree.children_rewards[b, parent, action], rewards[-1], rtol=1e-5, atol=1e-5
            )


# ----------------------------------------------------------------------------- the reference itself


def test_reference_schedule_matches_mctx_examples():
    # Worked out by hand from mctx's get_sequence_of_considered_visits.
    assert ref.considered_visit_sequence(4, 16) == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert ref.considered_visit_sequence(2, 6) == [0, 0, 1, 1, 2, 2]
    assert ref.considered_visit_sequence(1, 4) == [0, 1, 2, 3]
    for m in range(1, 17):
        for n in (1, 5, 17, 64):
            assert ref.considered_visit_sequence(m, n) == considered_visit_sequence(m, n)


def test_reference_by_hand_one_simulation():
    """N = 1 on a two-action problem, worked out by hand."""
    logits = np.array([0.0, 1.0])

    def model(state, action, is_reset):
        return ref.Transition(
            reward=0.5, discount=0.9, prior_logits=np.zeros(2), value=-1.0
        ), state + 1

    result = ref.run_muzero(model, logits, 0.2, 0, num_simulations=1)
    # PUCT at the root with no visits: score = prior only, action 1 wins.
    np.testing.assert_array_equal(result.visit_counts, [0, 1])
    q = 0.5 + 0.9 * -1.0
    np.testing.assert_allclose(result.qvalues, [0.0, q])
    np.testing.assert_allclose(result.root_value, (0.2 + q) / 2)
    assert result.tree_min_max == (q, q)
    arrays = result.arrays()
    np.testing.assert_array_equal(arrays["parents"], [-1, 0])
    np.testing.assert_array_equal(arrays["node_visits"], [2, 1])
    assert math.isclose(
        result.min_margin, math.sqrt(1) * 1.25 * (1 / (1 + math.e)) * (math.e - 1), rel_tol=1e-3
    )


PARALLEL_CASES = {
    # B >= search.search.PARALLEL_MIN_BATCH: the prange kernels
    "muzero": Case(
        batch_size=64,
        num_simulations=12,
        num_actions=4,
        qtransform="tree_mean",
        discounts="mixed",
        interior_legal=True,
    ),
    "gumbel": Gumbel(
        batch_size=64, num_simulations=12, num_actions=4, horizon=2, max_depth=3, root_legal=True
    ),
}


@pytest.mark.parametrize("name", list(PARALLEL_CASES))
def test_parallel_batch_matches_reference(name):
    check_case(PARALLEL_CASES[name], 0)


# ----------------------------------------------------------------------------- slow: big problems

SLOW_CASES = {
    "muzero_mixed_legal": Case(
        num_simulations=400,
        num_actions=18,
        num_states=300,
        batch_size=4,
        discounts="mixed",
        interior_legal=True,
    ),
    "muzero_tree_mean_two_player": Case(
        qtransform="tree_mean",
        num_simulations=400,
        num_actions=9,
        num_states=300,
        batch_size=4,
        discounts="two_player_terminal",
    ),
    "gumbel_mixed_legal": Gumbel(
        num_simulations=400,
        num_actions=18,
        num_states=300,
        batch_size=4,
        discounts="mixed",
        interior_legal=True,
    ),
    "prefix_h5": Case(
        horizon=5,
        qtransform="tree_mean",
        num_simulations=400,
        num_actions=9,
        num_states=300,
        batch_size=4,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("name", list(SLOW_CASES))
def test_large_problems_match_reference(name, seed):
    check_case(SLOW_CASES[name], 1000 + seed)
