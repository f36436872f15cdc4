"""Loading mctx golden records (``tests/data/mctx_golden``, vendored so a plain clone runs
the whole suite) and running our search on them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import search

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "mctx_golden"


def golden_paths() -> list[Path]:
    return sorted(GOLDEN_DIR.glob("*.npz"))


def load(path: Path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as z:
        record = {key: z[key] for key in z.files}
    return record, json.loads(str(record["config_json"]))


def table_recurrent_fn(record: dict):
    """The record's MDP as a recurrent function over int32 state ids."""

    def recurrent_fn(state, action):
        next_state = record["next_state"][state, action]
        step = search.StepOutput(
            reward=record["reward"][state, action],
            discount=record["discount"][state, action],
            prior_logits=record["prior_logits"][next_state],
            value=record["value"][next_state],
        )
        return step, next_state

    return recurrent_fn


def _qtransform(cfg: dict) -> search.QTransform:
    name, params = cfg["qtransform"], dict(cfg["qtransform_params"])
    builders = {
        "qtransform_by_parent_and_siblings": search.qtransform_by_parent_and_siblings,
        "qtransform_by_min_max": search.qtransform_by_min_max,
        "qtransform_completed_by_mix_value": search.qtransform_completed_by_mix_value,
    }
    return builders[name](**params)


def tabular(record: dict) -> search.TabularModel:
    """The record's MDP as a `search.TabularModel` (the model runs inside the kernels)."""
    return search.tabular_model(
        record["next_state"],
        record["reward"],
        record["discount"],
        record["prior_logits"],
        record["value"],
    )


def run_record(record: dict, cfg: dict, *, fused: bool = False) -> search.SearchOutput:
    """Runs the record's search; ``fused`` runs its MDP as a `search.TabularModel`."""
    states = record["root_state"]
    legal = ~record["root_invalid"] if cfg["invalid_actions_passed"] else None
    common = dict(
        num_simulations=cfg["num_simulations"],
        legal_mask=legal,
        max_depth=cfg["max_depth"],
        qtransform=_qtransform(cfg),
    )
    recurrent_fn = tabular(record) if fused else table_recurrent_fn(record)
    if cfg["policy"] == "muzero_policy":
        # mctx's noised (and masked) root logits are injected as the prior; no noise of ours.
        root = search.RootOutput(record["root_prior_logits_used"], record["value"][states], states)
        return search.muzero_policy(
            root,
            recurrent_fn,
            dirichlet_fraction=0.0,
            pb_c_init=cfg["pb_c_init"],
            pb_c_base=cfg["pb_c_base"],
            temperature=cfg["temperature"],
            action_gumbel=record["action_sampling_gumbel"],
            **common,
        )
    root = search.RootOutput(record["prior_logits"][states], record["value"][states], states)
    return search.gumbel_muzero_policy(
        root,
        recurrent_fn,
        max_num_considered_actions=cfg["max_num_considered_actions"],
        gumbel=record["gumbel"],
        **common,
    )
