"""Loading mctx Stochastic MuZero golden records (``tests/data/mctx_stochastic_golden``) and
running `search.stochastic_muzero_policy` on them (like `tests.search.golden` for the
deterministic records)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import search

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "mctx_stochastic_golden"


def golden_paths() -> list[Path]:
    return sorted(GOLDEN_DIR.glob("*.npz"))


def load(path: Path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as z:
        record = {key: z[key] for key in z.files}
    return record, json.loads(str(record["config_json"]))


def table_functions(record: dict, calls: list | None = None):
    """The record's MDP as ``(decision_fn, chance_fn)`` over int32 ids.

    Unlike mctx's functions (README section 1), these refuse an out-of-range call: mctx calls
    both functions on every expansion, our search only the one each new node needs. Each call
    appends ``(function name, number of roots)`` to ``calls`` when given."""
    num_states, num_actions = record["afterstate"].shape
    num_afterstates, num_codes = record["next_state"].shape

    def decision_fn(state, action):
        state, action = np.asarray(state), np.asarray(action)
        assert ((state >= 0) & (state < num_states)).all(), state
        assert ((action >= 0) & (action < num_actions)).all(), action
        if calls is not None:
            calls.append(("decision_fn", len(state)))
        after = record["afterstate"][state, action]
        output = search.AfterstateOutput(
            value=record["afterstate_value"][after], chance_logits=record["chance_logits"][after]
        )
        return output, after

    def chance_fn(after, code):
        after, code = np.asarray(after), np.asarray(code)
        assert ((after >= 0) & (after < num_afterstates)).all(), after
        assert ((code >= 0) & (code < num_codes)).all(), code
        if calls is not None:
            calls.append(("chance_fn", len(after)))
        state = record["next_state"][after, code]
        step = search.StepOutput(
            reward=record["reward"][after, code],
            discount=record["discount"][after, code],
            prior_logits=record["prior_logits"][state],
            value=record["value"][state],
        )
        return step, state

    return decision_fn, chance_fn


def _qtransform(cfg: dict) -> search.QTransform:
    if cfg["qtransform"] == "qtransform_by_min_max":
        return search.qtransform_by_min_max(**cfg["qtransform_params"])
    assert cfg["qtransform"] == "qtransform_by_parent_and_siblings", cfg["qtransform"]
    return search.qtransform_by_parent_and_siblings(**cfg["qtransform_params"])


def run_record(record: dict, cfg: dict, calls: list | None = None) -> search.SearchOutput:
    """Runs the record's search. mctx's noised (and masked) root logits are injected as the
    prior (no noise of ours), and its Gumbel noise for the sampled action (README section 4)."""
    states = record["root_state"]
    root = search.RootOutput(record["root_prior_logits_used"], record["value"][states], states)
    decision_fn, chance_fn = table_functions(record, calls)
    return search.stochastic_muzero_policy(
        root,
        decision_fn,
        chance_fn,
        num_simulations=cfg["num_simulations"],
        num_chance_outcomes=cfg["num_chance_outcomes"],
        legal_mask=~record["root_invalid"] if cfg["invalid_actions_passed"] else None,
        max_depth=cfg["max_depth"],
        dirichlet_fraction=0.0,
        pb_c_init=cfg["pb_c_init"],
        pb_c_base=cfg["pb_c_base"],
        temperature=cfg["temperature"],
        qtransform=_qtransform(cfg),
        action_gumbel=record["action_sampling_gumbel"],
    )
