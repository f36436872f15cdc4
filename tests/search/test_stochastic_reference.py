"""The numpy Stochastic MuZero reference reproduces every mctx stochastic golden record.

Integer outputs (visit counts, tree structure, node kinds, embeddings, the sampled action) match
exactly; floats to ``rtol=atol=1e-5``: the reference computes in float64 and mctx in float32
(running means over up to 100 visits and XLA's own exp/log keep the difference near 1e-6).
Exact integer parity is robust because every stored root was drawn so that each of its
decisions had a relative margin of at least ``robust_margin_threshold`` (2e-6), more than mctx's
``1e-7 * U(0, 1)`` tie-break noise and float32 rounding can move a score; the test re-checks it.
No JAX needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.search import stochastic_reference as ref

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "mctx_stochastic_golden"
PATHS = sorted(GOLDEN_DIR.glob("*.npz"))
NUM_RECORDS = 27
TOL = dict(rtol=1e-5, atol=1e-5)
EXACT_TREE_KEYS = (
    "node_visits",
    "parents",
    "action_from_parent",
    "is_decision_node",
    "state_embedding",
    "afterstate_embedding",
)


def load(path: Path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as z:
        record = {key: z[key] for key in z.files}
    return record, json.loads(str(record["config_json"]))


def qtransform(cfg: dict):
    if cfg["qtransform"] == "qtransform_by_min_max":
        return ref.MinMax(**cfg["qtransform_params"])
    assert cfg["qtransform"] == "qtransform_by_parent_and_siblings", cfg["qtransform"]
    return ref.ParentAndSiblings(**cfg["qtransform_params"])


def run_row(record: dict, cfg: dict, b: int) -> ref.Result:
    state = int(record["root_state"][b])
    return ref.run_stochastic_muzero(
        ref.TableModel.from_record(record),
        record["root_prior_logits_used"][b],  # mctx's noised (and masked) root logits
        record["value"][state],
        state,
        num_simulations=cfg["num_simulations"],
        invalid=record["root_invalid"][b] if cfg["invalid_actions_passed"] else None,
        qtransform=qtransform(cfg),
        max_depth=cfg["max_depth"],
        pb_c_init=cfg["pb_c_init"],
        pb_c_base=cfg["pb_c_base"],
        temperature=cfg["temperature"],
        action_gumbel=record["action_sampling_gumbel"][b],
    )


def test_stochastic_golden_records_are_in_the_repository():
    # A plain clone has nothing outside the repository: the records must live inside it.
    repository = Path(__file__).resolve().parents[2]
    assert GOLDEN_DIR.resolve().is_relative_to(repository)
    assert len(PATHS) == NUM_RECORDS, f"expected {NUM_RECORDS} records, found {len(PATHS)}"
    assert (GOLDEN_DIR / "README.md").is_file()


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_reference_reproduces_mctx_stochastic_record(path):
    record, cfg = load(path)
    A, C = cfg["num_actions"], cfg["num_chance_outcomes"]
    B, N = cfg["batch_size"], cfg["num_simulations"]
    assert record["node_visits"].shape == (B, N + 1)
    assert record["root_prior_logits_used"].shape == (B, A)
    for b in range(B):
        result = run_row(record, cfg, b)
        assert result.min_margin >= cfg["robust_margin_threshold"], (b, result.min_margin)
        arrays = result.arrays()
        where = f"{path.stem} row {b}"
        for key in EXACT_TREE_KEYS:
            np.testing.assert_array_equal(arrays[key], record[key][b], err_msg=f"{where} {key}")
        np.testing.assert_array_equal(result.visit_counts, record["root_visit_counts"][b])
        assert result.action == record["action"][b], where
        for key, value in [
            ("node_values", arrays["node_values"]),
            ("raw_values", arrays["raw_values"]),
            ("root_value", result.root_value),
            ("root_qvalues", result.qvalues),
            ("action_weights", result.action_weights),
            ("root_visit_probs", result.action_weights),
        ]:
            np.testing.assert_allclose(value, record[key][b], **TOL, err_msg=f"{where} {key}")
        if bool(record["has_full_children"]):
            assert record["children_index"].shape == (B, N + 1, A + C)
            for key in ("children_index", "children_visits"):
                np.testing.assert_array_equal(arrays[key], record[key][b], err_msg=f"{where} {key}")
            for key in (
                "children_values",
                "children_prior_logits",  # -inf padding compares equal to -inf
                "children_rewards",
                "children_discounts",
            ):
                np.testing.assert_allclose(
                    arrays[key], record[key][b], **TOL, err_msg=f"{where} {key}"
                )


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_root_logits_are_the_dirichlet_mix_then_the_mask(path):
    """``root_prior_logits_used`` follows from the table logits and ``dirichlet_noise``."""
    record, cfg = load(path)
    for b in range(cfg["batch_size"]):
        invalid = record["root_invalid"][b] if cfg["invalid_actions_passed"] else None
        expected = ref.root_prior_logits(
            record["prior_logits"][record["root_state"][b]],
            noise=record["dirichlet_noise"][b],
            fraction=cfg["dirichlet_fraction"],
            invalid=invalid,
        )
        np.testing.assert_allclose(record["root_prior_logits_used"][b], expected, **TOL)
