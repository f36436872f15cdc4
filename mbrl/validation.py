"""``validate(cfg)``: refuse a ``TrainConfig`` that cannot describe a run, before anything is
built, with messages that name each key as the user types it (``trainer.num_games``, not the
field name a part knows it by)."""

from __future__ import annotations

from games.opponents import OPPONENT_SPECS
from mbrl.config import (
    ALGORITHMS,
    GAME_KINDS,
    GUMBEL_ALGORITHMS,
    LATENT_ALGORITHMS,
    LM_ALGORITHMS,
    TrainConfig,
)

# Lower bounds of the counts a user sets, checked before anything is built so that the message
# names the key as typed (the parts' own checks know only their field names).
AT_LEAST = {
    "game.max_moves": 0,
    "trainer.batch_size": 1,
    "trainer.num_games": 1,
    "trainer.sync_every": 1,
    "trainer.warmup_moves": 0,
    "trainer.temperature_moves": 0,
    "trainer.random_opening_moves": 0,
    "trainer.checkpoint_every": 0,
    "trainer.log_every": 0,
    "trainer.torch_threads": 0,
    "trainer.numba_threads": 0,
    "search.num_simulations": 1,
    "search.eval_simulations": 0,
    "search.max_num_considered_actions": 1,
    "replay.capacity": 1,
    "algo.unroll_steps": 0,
    "algo.td_steps": 1,
    "algo.dynamic_td_every": 0,
    "algo.target_update_every": 1,
    "algo.segment_length": 0,
    "eval.every": 0,
    "eval.games": 1,
    "eval.simulations": 0,
    "eval.elo_pool": 0,
    "eval.elo_games": 1,
    "llm.layers": 1,
    "llm.heads": 1,
    "llm.width": 1,
    "llm.context": 1,
    "llm.solutions_per_prompt": 1,
    "llm.pretrain_steps": 0,
    "llm.candidates": 1,
    "llm.max_new_tokens": 1,
    "llm.simulations": 1,
    "llm.searches_per_prompt": 1,
    "llm.rounds": 0,
    "llm.round_steps": 0,
    "llm.round_prompts": 0,
    "llm.samples_per_prompt": 1,
    "llm.eval_prompts": 0,
}


def _value(cfg: TrainConfig, key: str):
    group, name = key.split(".")
    return getattr(getattr(cfg, group), name)


def validate(cfg: TrainConfig) -> None:
    if cfg.algo.name not in ALGORITHMS:
        raise ValueError(f"algo.name must be one of {ALGORITHMS}, got {cfg.algo.name!r}")
    if cfg.game.kind not in GAME_KINDS:
        raise ValueError(f"game.kind must be one of {GAME_KINDS}, got {cfg.game.kind!r}")
    for key, low in AT_LEAST.items():
        if _value(cfg, key) < low:
            raise ValueError(f"{key} must be >= {low}, got {_value(cfg, key)}")
    if not cfg.trainer.replay_ratio > 0:
        raise ValueError(f"trainer.replay_ratio must be > 0, got {cfg.trainer.replay_ratio}")
    if not cfg.eval.opponents and cfg.game.kind == "openspiel" and not cfg.eval.exhaustive:
        raise ValueError(
            f"eval.opponents=[] names no opponent; give one or more of {OPPONENT_SPECS}"
        )
    if (cfg.game.kind == "text") != (cfg.algo.name in LM_ALGORITHMS):
        raise ValueError(
            f"algo={cfg.algo.name} does not train on game.kind={cfg.game.kind}: language-model "
            f"tasks (game.kind=text) take algo={' | '.join(LM_ALGORITHMS)}, and those train "
            "only on text tasks"
        )
    for key in ("max_minutes", "max_train_minutes"):
        if not getattr(cfg.trainer, key) >= 0:
            raise ValueError(
                f"trainer.{key} must be >= 0 (0 = no limit), got {getattr(cfg.trainer, key)}"
            )
    if not 0.0 <= cfg.algo.reanalyze_policy <= 1.0:
        raise ValueError(
            f"algo.reanalyze_policy must lie in [0, 1], got {cfg.algo.reanalyze_policy}"
        )
    if not 0.0 < cfg.algo.discount <= 1.0:
        raise ValueError(f"algo.discount must lie in (0, 1], got {cfg.algo.discount}")
    if not 0.0 <= cfg.algo.search_value_weight <= 1.0:
        raise ValueError(
            "algo.search_value_weight must be in [0, 1] (0 = the game outcome only), got "
            f"{cfg.algo.search_value_weight}"
        )
    if cfg.game.kind == "text":
        return
    expected = "gumbel" if cfg.algo.name in GUMBEL_ALGORITHMS else "puct"
    if cfg.search.policy != expected:
        raise ValueError(
            f"algo {cfg.algo.name} searches with search.policy={expected}, got "
            f"{cfg.search.policy!r}"
        )
    if cfg.game.kind != "openspiel" and cfg.algo.name not in LATENT_ALGORITHMS:
        raise ValueError(
            f"game.kind={cfg.game.kind} has no simulator for the search to plan with; use a "
            f"learned-model algorithm: algo={' | '.join(LATENT_ALGORITHMS)}"
        )
