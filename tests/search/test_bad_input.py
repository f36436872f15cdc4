"""Bad inputs fail early with errors that name the bad value and what would be accepted."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import search
from tests.search.problems import make_problem, root_legal_mask, root_output, table_recurrent_fn

BATCH, ACTIONS = 2, 3
POLICIES = {"muzero": search.muzero_policy, "gumbel": search.gumbel_muzero_policy}


@pytest.fixture
def problem():
    return make_problem(0, BATCH, ACTIONS, legal_fraction=1.0)


@pytest.fixture(params=list(POLICIES))
def policy(request):
    return POLICIES[request.param]


def tabular(problem) -> search.TabularModel:
    return search.tabular_model(
        problem.next_state,
        problem.reward,
        problem.discount,
        problem.prior_logits,
        problem.value,
        problem.legal,
    )


@pytest.fixture(params=["python", "tabular"])
def model(request, problem):
    """The same MDP as a Python recurrent function or as a `search.TabularModel` (whose whole
    search, root checks included, runs in one kernel)."""
    return table_recurrent_fn(problem) if request.param == "python" else tabular(problem)


def run(
    problem,
    policy=search.muzero_policy,
    *,
    root=None,
    recurrent_fn=None,
    num_simulations=4,
    **kwargs,
):
    root = root_output(problem) if root is None else root
    recurrent_fn = recurrent_fn or table_recurrent_fn(problem)
    return policy(root, recurrent_fn, num_simulations=num_simulations, **kwargs)


def step_with(problem, **fields):
    """A recurrent function like the table's whose `StepOutput` has ``fields`` replaced."""
    table_fn = table_recurrent_fn(problem)

    def recurrent_fn(state, action):
        step, next_state = table_fn(state, action)
        return step._replace(**fields), next_state

    return recurrent_fn


def embedding_with(problem, make_embedding):
    """A recurrent function like the table's that returns ``make_embedding(next_state)``."""
    table_fn = table_recurrent_fn(problem)

    def recurrent_fn(state, action):
        step, next_state = table_fn(state, action)
        return step, make_embedding(next_state)

    return recurrent_fn


def escaped(text: str) -> str:
    return re.escape(text)


# ----------------------------------------------------------------------------- root shapes/dtypes


def test_root_must_be_a_root_output(problem, policy):
    root = tuple(root_output(problem))
    with pytest.raises(TypeError, match=r"root must be a search\.RootOutput; got tuple"):
        run(problem, policy, root=root)


def test_value_batch_must_match_prior_logits(problem, policy):
    root = root_output(problem)._replace(value=np.zeros(BATCH + 1, np.float32))
    with pytest.raises(
        ValueError, match=escaped(f"root.value must have shape ({BATCH},); got ({BATCH + 1},)")
    ):
        run(problem, policy, root=root)


def test_value_with_a_trailing_axis_is_rejected(problem):
    root = root_output(problem)._replace(value=np.zeros((BATCH, 1), np.float32))
    with pytest.raises(
        ValueError, match=escaped(f"root.value must have shape ({BATCH},); got ({BATCH}, 1)")
    ):
        run(problem, root=root)


@pytest.mark.parametrize("shape", [(ACTIONS,), (BATCH, ACTIONS, 1), (0, ACTIONS), (BATCH, 0)])
def test_prior_logits_must_be_a_nonempty_matrix(problem, shape):
    root = root_output(problem)._replace(prior_logits=np.zeros(shape, np.float32))
    with pytest.raises(
        ValueError,
        match=escaped(f"root.prior_logits must have shape [B, A] with B, A >= 1; got {shape}"),
    ):
        run(problem, root=root)


def test_prior_logits_as_nested_list_gets_a_clear_error(problem):
    root = root_output(problem)
    root = root._replace(prior_logits=root.prior_logits.tolist())
    with pytest.raises(ValueError, match=r"root\.prior_logits.*list"):
        run(problem, root=root)


def test_integer_prior_logits_are_rejected(problem, policy):
    root = root_output(problem)._replace(prior_logits=np.zeros((BATCH, ACTIONS), np.int64))
    with pytest.raises(
        TypeError,
        match=escaped(
            f"root.prior_logits must be a floating-point array of shape ({BATCH}, {ACTIONS}); got dtype int64"
        ),
    ):
        run(problem, policy, root=root)


def test_integer_root_value_is_rejected(problem):
    root = root_output(problem)._replace(value=np.zeros(BATCH, np.int32))
    with pytest.raises(
        TypeError, match=r"root\.value must be a floating-point array .* got dtype int32"
    ):
        run(problem, root=root)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_root_logits_are_rejected(problem, policy, model, bad):
    root = root_output(problem)
    logits = root.prior_logits.copy()
    logits[1, 0] = bad
    with pytest.raises(
        ValueError,
        match=escaped(
            "root.prior_logits has NaN or infinite entries (rows [1]); finite values are required"
        ),
    ):
        run(problem, policy, root=root._replace(prior_logits=logits), recurrent_fn=model)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_root_value_is_rejected(problem, policy, model, bad):
    root = root_output(problem)._replace(value=np.array([bad, 0.0], np.float32))
    with pytest.raises(
        ValueError, match=escaped("root.value has NaN or infinite entries (rows [0])")
    ):
        run(problem, policy, root=root, recurrent_fn=model)


@pytest.mark.parametrize("ids", [[0, -1], [0, 10**6], [2**32, 0]])
def test_tabular_root_state_ids_out_of_range_are_rejected(problem, policy, ids):
    num_states = problem.value.shape[0]
    root = root_output(problem, embedding=np.array(ids, np.int64))
    with pytest.raises(ValueError, match=escaped(f"root state ids must be in [0, {num_states})")):
        run(problem, policy, root=root, recurrent_fn=tabular(problem))


def test_tabular_root_state_ids_must_be_integers(problem, policy):
    root = root_output(problem, embedding=np.zeros(BATCH, np.float32))
    with pytest.raises(ValueError, match=r"root embedding must be integer state ids"):
        run(problem, policy, root=root, recurrent_fn=tabular(problem))


def test_torch_root_with_nan_is_rejected(problem):
    root = root_output(problem)
    value = torch.tensor([0.0, float("nan")])
    with pytest.raises(
        ValueError, match=escaped("root.value has NaN or infinite entries (rows [1])")
    ):
        run(problem, root=root._replace(value=value))


# ----------------------------------------------------------------------------- legal masks


def test_legal_mask_of_wrong_shape(problem, policy):
    mask = np.ones((BATCH, ACTIONS + 1), bool)
    with pytest.raises(
        ValueError,
        match=escaped(f"legal_mask must have shape ({BATCH}, {ACTIONS}); got {mask.shape}"),
    ):
        run(problem, policy, legal_mask=mask)


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.uint8])
def test_legal_mask_must_be_bool(problem, policy, dtype):
    mask = np.ones((BATCH, ACTIONS), dtype)
    with pytest.raises(
        TypeError,
        match=escaped(
            f"legal_mask must be a bool array (True = legal) of shape ({BATCH}, {ACTIONS}); got dtype {np.dtype(dtype)}"
        ),
    ):
        run(problem, policy, legal_mask=mask)


def test_root_without_a_legal_action(problem, policy, model):
    mask = root_legal_mask(problem).copy()
    mask[1] = False
    with pytest.raises(
        ValueError,
        match=escaped("legal_mask: rows [1] have no legal action; every node needs one"),
    ):
        run(problem, policy, legal_mask=mask, recurrent_fn=model)


def test_interior_legal_mask_with_an_empty_row(problem, policy):
    legal = np.ones((BATCH, ACTIONS), bool)
    legal[0] = False
    with pytest.raises(
        ValueError, match=r"StepOutput\.legal \(simulation 0\): rows \[0\] have no legal action"
    ):
        run(problem, policy, recurrent_fn=step_with(problem, legal=legal))


def test_interior_legal_mask_of_wrong_shape_or_dtype(problem):
    with pytest.raises(
        ValueError,
        match=escaped(
            f"StepOutput.legal (simulation 0) must have shape ({BATCH}, {ACTIONS}); got (1, {ACTIONS})"
        ),
    ):
        run(problem, recurrent_fn=step_with(problem, legal=np.ones((1, ACTIONS), bool)))
    with pytest.raises(
        TypeError,
        match=r"StepOutput\.legal \(simulation 0\) must be a bool array .* got dtype int64",
    ):
        run(problem, recurrent_fn=step_with(problem, legal=np.ones((BATCH, ACTIONS), np.int64)))


def test_interior_logits_all_minus_inf_blame_the_logits(problem):
    logits = np.full((BATCH, ACTIONS), -np.inf, np.float32)
    # The first clause (before the generic advice after ';') must say what was wrong.
    with pytest.raises(ValueError, match=r"recurrent_fn returned [^;]*logits"):
        run(problem, recurrent_fn=step_with(problem, prior_logits=logits))


# ----------------------------------------------------------------------------- model outputs


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("value", np.array([0.0, np.nan], np.float32), "a NaN or infinite value"),
        ("value", np.array([np.inf, 0.0], np.float32), "a NaN or infinite value"),
        ("reward", np.array([0.0, np.nan], np.float32), "a NaN or infinite reward"),
        ("discount", np.array([0.0, np.nan], np.float32), "a NaN or infinite discount"),
        (
            "prior_logits",
            np.array([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0]], np.float32),
            "NaN or +inf prior logits",
        ),
    ],
)
def test_non_finite_model_output_is_reported(problem, policy, field, value, what):
    with pytest.raises(
        ValueError, match=escaped(f"recurrent_fn returned {what} at simulation 0 for roots")
    ) as info:
        run(problem, policy, recurrent_fn=step_with(problem, **{field: value}))
    assert "values, rewards and discounts must be finite" in str(info.value)


def test_nan_reward_names_the_roots(problem):
    reward = np.array([0.0, np.nan], np.float32)
    with pytest.raises(ValueError, match=escaped("for roots [1]")):
        run(problem, recurrent_fn=step_with(problem, reward=reward))


def test_step_prior_logits_of_wrong_shape(problem, policy):
    logits = np.zeros((BATCH, ACTIONS + 2), np.float32)
    with pytest.raises(
        ValueError,
        match=escaped(
            f"StepOutput.prior_logits must have shape ({BATCH}, {ACTIONS}); got ({BATCH}, {ACTIONS + 2})"
        ),
    ):
        run(problem, policy, recurrent_fn=step_with(problem, prior_logits=logits))


def test_step_value_of_wrong_shape(problem):
    with pytest.raises(
        ValueError, match=escaped(f"StepOutput.value must have shape ({BATCH},); got ({BATCH}, 1)")
    ):
        run(problem, recurrent_fn=step_with(problem, value=np.zeros((BATCH, 1), np.float32)))


def test_integer_step_discount_is_rejected(problem):
    with pytest.raises(
        TypeError, match=r"StepOutput\.discount must be a floating-point array .* got dtype int64"
    ):
        run(problem, recurrent_fn=step_with(problem, discount=np.ones(BATCH, np.int64)))


@pytest.mark.parametrize(
    ("make_result", "got"),
    [
        (lambda step, state: step, "StepOutput"),
        (lambda step, state: (state, step), "tuple"),
        (lambda step, state: [step, state], "list"),
        (lambda step, state: (step, state, None), "tuple"),
        (lambda step, state: (tuple(step), state), "tuple"),
    ],
    ids=["step-only", "swapped", "list", "triple", "plain-tuple-step"],
)
def test_recurrent_fn_must_return_a_step_and_embedding_pair(problem, policy, make_result, got):
    table_fn = table_recurrent_fn(problem)

    def recurrent_fn(state, action):
        return make_result(*table_fn(state, action))

    with pytest.raises(
        TypeError,
        match=escaped(
            f"recurrent_fn must return a pair (search.StepOutput, new_embedding); got {got}"
        ),
    ):
        run(problem, policy, recurrent_fn=recurrent_fn)


def test_embedding_of_wrong_shape_is_rejected(problem, policy):
    recurrent_fn = embedding_with(problem, lambda state: np.stack([state, state], axis=1))
    with pytest.raises(
        ValueError,
        match=escaped(
            f"recurrent_fn returned an embedding of shape ({BATCH}, 2); expected ({BATCH},) like the root embedding"
        ),
    ):
        run(problem, policy, recurrent_fn=recurrent_fn)


def test_embedding_of_wrong_batch_size_is_rejected(problem):
    recurrent_fn = embedding_with(problem, lambda state: state[:1])
    with pytest.raises(
        ValueError,
        match=escaped(f"recurrent_fn returned an embedding of shape (1,); expected ({BATCH},)"),
    ):
        run(problem, recurrent_fn=recurrent_fn)


def test_object_embeddings_of_wrong_length_are_rejected(problem):
    root = root_output(problem, embedding=problem.root_states.tolist())
    recurrent_fn = embedding_with(problem, lambda state: state.tolist()[:1])
    with pytest.raises(
        ValueError, match=escaped(f"recurrent_fn returned 1 embeddings; expected {BATCH}")
    ):
        run(problem, root=root, recurrent_fn=recurrent_fn)


def test_embedding_nest_of_another_structure_is_rejected(problem):
    states = problem.root_states
    root = root_output(
        problem, embedding={"state": states, "aux": np.zeros((BATCH, 2), np.float32)}
    )
    table_fn = table_recurrent_fn(problem)

    def recurrent_fn(embedding, action):
        step, next_state = table_fn(embedding["state"], action)
        return step, {"state": next_state}

    with pytest.raises(
        ValueError,
        match=escaped(
            "recurrent_fn returned an embedding with keys ['state']; expected ['state', 'aux']"
        ),
    ):
        run(problem, root=root, recurrent_fn=recurrent_fn)


def test_list_embedding_returned_for_an_array_root_gets_a_clear_error(problem):
    recurrent_fn = embedding_with(problem, lambda state: state.tolist())
    with pytest.raises((TypeError, ValueError), match=r"recurrent_fn returned"):
        run(problem, recurrent_fn=recurrent_fn)


def test_embedding_of_another_dtype_is_rejected(problem):
    recurrent_fn = embedding_with(problem, lambda state: state + 0.5)
    with pytest.raises((TypeError, ValueError), match=r"recurrent_fn returned .*dtype"):
        run(problem, recurrent_fn=recurrent_fn)


def test_numpy_embedding_returned_for_a_torch_root_gets_a_clear_error(problem):
    root = root_output(problem, embedding=torch.zeros(BATCH, 4))
    table_fn = table_recurrent_fn(problem)

    def recurrent_fn(embedding, action):
        step, _ = table_fn(problem.root_states, action.numpy())
        return step, np.zeros((BATCH, 4), np.float32)

    with pytest.raises((TypeError, ValueError), match=r"recurrent_fn returned"):
        run(problem, root=root, recurrent_fn=recurrent_fn)


@pytest.mark.parametrize(
    "embedding", [np.zeros(BATCH + 1, np.int32), list(range(BATCH + 1))], ids=["array", "list"]
)
def test_root_embedding_batch_must_match(problem, embedding):
    with pytest.raises(
        ValueError,
        match=escaped(f"root embedding has batch size {BATCH + 1}; prior_logits has {BATCH}"),
    ):
        run(problem, root=root_output(problem, embedding=embedding))


def test_root_embedding_of_unsupported_type(problem):
    with pytest.raises(
        TypeError,
        match=r"embedding leaves must be torch tensors or numpy arrays .*Python list.* got int",
    ):
        run(problem, root=root_output(problem, embedding=5))


# ----------------------------------------------------------------------------- hyperparameters


@pytest.mark.parametrize("num_simulations", [0, -3, 2.0, 2.5, True, "4", None])
def test_num_simulations_must_be_a_positive_integer(problem, policy, num_simulations):
    with pytest.raises(
        ValueError,
        match=escaped(f"num_simulations must be a positive integer; got {num_simulations!r}"),
    ):
        run(problem, policy, num_simulations=num_simulations)


def test_numpy_integer_num_simulations_is_accepted(problem):
    out = run(problem, num_simulations=np.int64(3))
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), 3)


@pytest.mark.parametrize("m", [0, -1, 1.5])
def test_max_num_considered_actions_must_be_positive(problem, m):
    with pytest.raises(
        ValueError,
        match=escaped(f"max_num_considered_actions must be a positive integer; got {m!r}"),
    ):
        run(problem, search.gumbel_muzero_policy, max_num_considered_actions=m)


@pytest.mark.parametrize("max_depth", [0, -1, 1.0])
def test_max_depth_must_be_positive(problem, policy, max_depth):
    with pytest.raises(
        ValueError, match=escaped(f"max_depth must be a positive integer; got {max_depth!r}")
    ):
        run(problem, policy, max_depth=max_depth)


def test_value_prefix_horizon_must_be_positive(problem):
    with pytest.raises(
        ValueError, match=escaped("value_prefix_horizon must be a positive integer; got 0")
    ):
        run(problem, value_prefix_horizon=0)


@pytest.mark.parametrize("fraction", [-0.1, 1.5, float("nan")])
def test_dirichlet_fraction_must_be_in_unit_interval(problem, fraction):
    with pytest.raises(
        ValueError, match=escaped(f"dirichlet_fraction must be in [0.0, 1.0]; got {fraction!r}")
    ):
        run(problem, dirichlet_fraction=fraction)


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("nan"), float("inf")])
def test_dirichlet_alpha_must_be_positive(problem, alpha):
    with pytest.raises(
        ValueError,
        match=escaped(f"dirichlet_alpha must be a positive finite number; got {alpha!r}"),
    ):
        run(problem, dirichlet_alpha=alpha)


@pytest.mark.parametrize("temperature", [-1.0, float("nan"), float("inf")])
def test_temperature_must_be_finite_and_non_negative(problem, temperature):
    with pytest.raises(
        ValueError, match=escaped(f"temperature must be a finite number >= 0; got {temperature!r}")
    ):
        run(problem, temperature=temperature)


def test_pb_c_base_must_be_positive(problem):
    with pytest.raises(
        ValueError, match=escaped("pb_c_base must be a positive finite number; got 0.0")
    ):
        run(problem, pb_c_base=0.0)


def test_pb_c_init_must_be_finite(problem):
    with pytest.raises(ValueError, match=r"pb_c_init"):
        run(problem, pb_c_init=float("nan"))


@pytest.mark.parametrize("scale", [-1.0, float("nan"), float("inf")])
def test_gumbel_scale_must_be_finite_and_non_negative(problem, scale):
    with pytest.raises(
        ValueError, match=escaped(f"gumbel_scale must be a finite number >= 0; got {scale!r}")
    ):
        run(problem, search.gumbel_muzero_policy, gumbel_scale=scale)


@pytest.mark.parametrize(
    "qtransform", [{"kind": 0}, (0, 1e-8), "min_max", 1.0], ids=["dict", "tuple", "str", "float"]
)
def test_qtransform_must_be_a_qtransform(problem, policy, qtransform):
    with pytest.raises(
        TypeError,
        match=r"qtransform must be built with search\.qtransform_by_parent_and_siblings, qtransform_by_min_max, "
        r"qtransform_tree_min_max or qtransform_completed_by_mix_value; got "
        + type(qtransform).__name__,
    ):
        run(problem, policy, qtransform=qtransform)


def test_falsy_qtransform_is_not_silently_replaced(problem):
    with pytest.raises(TypeError, match=r"qtransform must be built with"):
        run(problem, qtransform=0)


@pytest.mark.parametrize(("low", "high"), [(1.0, 1.0), (2.0, -2.0), (float("nan"), 1.0)])
def test_qtransform_by_min_max_needs_max_above_min(low, high):
    with pytest.raises(
        ValueError,
        match=escaped(
            f"qtransform_by_min_max needs max_value > min_value; got min_value={low!r}, max_value={high!r}"
        ),
    ):
        search.qtransform_by_min_max(min_value=low, max_value=high)


def test_qtransform_by_min_max_needs_finite_bounds():
    with pytest.raises(ValueError, match=r"qtransform_by_min_max"):
        search.qtransform_by_min_max(min_value=-np.inf, max_value=np.inf)


@pytest.mark.parametrize("floor", [0.0, -1.0, float("nan")])
def test_qtransform_tree_min_max_needs_a_positive_floor(floor):
    with pytest.raises(ValueError, match=escaped(f"floor must be > 0; got {floor}")):
        search.qtransform_tree_min_max(floor=floor)


def test_qtransform_tree_min_max_needs_a_known_unvisited_rule():
    with pytest.raises(
        ValueError, match=escaped("unvisited must be 'parent_mean' or 'min'; got 'max'")
    ):
        search.qtransform_tree_min_max(unvisited="max")


def test_qtransform_completed_by_mix_value_needs_finite_numbers():
    with pytest.raises(ValueError, match=r"value_scale"):
        search.qtransform_completed_by_mix_value(value_scale=float("nan"))


# ----------------------------------------------------------------------------- seeds


@pytest.mark.parametrize(
    ("seed", "described"),
    [
        (np.array([1, 2, 3], np.uint64), "ndarray with shape (3,) and dtype uint64"),
        (np.array([1], np.uint64), "ndarray with shape (1,) and dtype uint64"),
        (np.array([1.0, 2.0]), "ndarray with shape (2,) and dtype float64"),
        (1.5, "float with shape () and dtype float64"),
    ],
    ids=["too-long", "too-short", "float-array", "float"],
)
def test_seed_must_be_an_int_or_one_key_per_root(problem, policy, seed, described):
    with pytest.raises(
        ValueError,
        match=escaped(
            f"seed must be an int, a numpy Generator or an integer array of shape ({BATCH},) "
            f"(one key per root); got {described}"
        ),
    ):
        run(problem, policy, seed=seed)
