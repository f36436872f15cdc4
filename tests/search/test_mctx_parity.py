"""Every mctx golden record reproduced: integer outputs exactly, floats to tolerance."""

from pathlib import Path

import numpy as np
import pytest

from tests.search.golden import GOLDEN_DIR, golden_paths, load, run_record

PATHS = golden_paths()


def test_golden_records_are_present_in_the_repository():
    # A user's plain clone has no ../shared: the tests must read a copy kept in the repository.
    repository = Path(__file__).resolve().parents[2]
    assert GOLDEN_DIR.resolve().is_relative_to(repository)
    assert len(PATHS) == 44, f"expected the 44 mctx golden records, found {len(PATHS)}"


@pytest.mark.parametrize("fused", [False, True], ids=["callback", "tabular"])
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_matches_mctx_golden_record(path, fused):
    record, cfg = load(path)
    out = run_record(record, cfg, fused=fused)
    tree = out.tree
    np.testing.assert_array_equal(out.visit_counts, record["root_visit_counts"].astype(np.int32))
    np.testing.assert_array_equal(tree.node_visits, record["node_visits"])
    np.testing.assert_array_equal(tree.parents, record["parents"])
    np.testing.assert_array_equal(tree.action_from_parent, record["action_from_parent"])
    used = tree.node_visits > 0
    np.testing.assert_array_equal(out.embeddings[used], record["embeddings"][used])
    np.testing.assert_array_equal(out.action, record["action"])
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.action_weights, record["action_weights"], **tol)
    np.testing.assert_allclose(out.root_value, record["root_value"], **tol)
    np.testing.assert_allclose(out.qvalues, record["root_qvalues"], **tol)
    np.testing.assert_allclose(tree.node_values, record["node_values"], **tol)
    np.testing.assert_allclose(tree.raw_values, record["raw_values"], **tol)
    if bool(record["has_full_children"]):
        np.testing.assert_array_equal(tree.children_index, record["children_index"])
        np.testing.assert_array_equal(tree.children_visits, record["children_visits"])
        np.testing.assert_allclose(tree.children_values, record["children_values"], **tol)
