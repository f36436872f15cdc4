"""``validate(cfg)``: refuse a ``TrainConfig`` that cannot describe a run, before anything is
built, with messages that name each key as the user types it (``trainer.num_games``, not the
field name a part knows it by)."""

from __future__ import annotations

import math
from pathlib import Path

from games.opponents import OPPONENT_SPECS
from mbrl import registry
from mbrl.config import LATENT_ALGORITHMS as LATENT
from mbrl.config import TrainConfig

BOARD_KINDS = ("openspiel", "chess")  # two-player games in BoardGameEnv: resigning
OPENING_KINDS = (*BOARD_KINDS, "chance")  # games whose envs play random openings

# Lower bounds of the counts a user sets, checked before anything is built so that the message
# names the key as typed (the parts' own checks know only their field names).
AT_LEAST = {
    "game.max_moves": 0,
    "trainer.max_steps": 1,
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
    "trainer.devices": 1,
    "search.num_simulations": 1,
    "search.eval_simulations": 0,
    "search.max_num_considered_actions": 1,
    "replay.capacity": 1,
    "algo.unroll_steps": 0,
    "algo.td_steps": 1,
    "algo.dynamic_td_every": 0,
    "algo.target_update_every": 1,
    "algo.segment_length": 0,
    "algo.chance_codes": 1,
    "eval.every": 0,
    "eval.games": 1,
    "eval.simulations": 0,
    "eval.elo_pool": 0,
    "eval.elo_games": 1,
}


def _value(cfg: TrainConfig, key: str):
    group, name = key.split(".")
    return getattr(getattr(cfg, group), name)


def check_at_least(cfg, bounds: dict[str, int]) -> None:
    """``key >= low`` for every ``key: low`` of ``bounds`` (keys as typed: ``group.name``)."""
    for key, low in bounds.items():
        if _value(cfg, key) < low:
            raise ValueError(f"{key} must be >= {low}, got {_value(cfg, key)}")


def validate(cfg: TrainConfig) -> None:
    algorithm = registry.ALGORITHMS.get(cfg.algo.name)
    if algorithm is None:
        names = " | ".join(registry.ALGORITHMS)
        raise ValueError(f"algo.name must be one of {names}, got {cfg.algo.name!r}")
    kind = cfg.game.kind
    if kind not in registry.GAME_KINDS:
        kinds = " | ".join(registry.GAME_KINDS)
        raise ValueError(f"game.kind must be one of {kinds}, got {kind!r}")
    check_at_least(cfg, AT_LEAST)
    if cfg.seed < 0:
        raise ValueError(f"seed must be >= 0, got {cfg.seed}")
    if not (math.isfinite(cfg.trainer.replay_ratio) and cfg.trainer.replay_ratio > 0):
        raise ValueError(
            f"trainer.replay_ratio must be a finite number > 0, got {cfg.trainer.replay_ratio}"
        )
    if not cfg.eval.opponents and cfg.game.kind == "openspiel" and not cfg.eval.exhaustive:
        raise ValueError(
            f"eval.opponents=[] names no opponent; give one or more of {OPPONENT_SPECS}"
        )
    if kind not in algorithm.game_kinds:
        raise ValueError(
            f"algo={algorithm.name} does not train on game.kind={kind} "
            f"({registry.GAME_KINDS[kind]}): it trains on game.kind="
            f"{' | '.join(algorithm.game_kinds)}, and game.kind={kind} takes algo="
            f"{' | '.join(registry.algorithms_for(kind))}"
        )
    game_specific = {
        "random_opening_moves": (cfg.trainer.random_opening_moves != 0, OPENING_KINDS),
        "resign_threshold": (cfg.trainer.resign_threshold > -1.0, BOARD_KINDS),
    }
    for key, (used, kinds) in game_specific.items():
        if used and kind not in kinds:
            raise ValueError(
                f"trainer.{key}={getattr(cfg.trainer, key)} needs game.kind="
                f"{' | '.join(kinds)}, got game.kind={kind}"
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
    _check_q_td_steps(cfg.algo)
    if not 0.0 < cfg.algo.discount <= 1.0:
        raise ValueError(f"algo.discount must lie in (0, 1], got {cfg.algo.discount}")
    if not 0.0 <= cfg.algo.search_value_weight <= 1.0:
        raise ValueError(
            "algo.search_value_weight must be in [0, 1] (0 = the value targets alone), got "
            f"{cfg.algo.search_value_weight}"
        )
    if cfg.algo.search_value_weight and cfg.algo.name in LATENT:
        raise ValueError(
            f"algo.search_value_weight={cfg.algo.search_value_weight} mixes the search's Q of "
            "the move played into value targets one position deep (algo=alphazero | "
            f"gumbel_alphazero | chance_alphazero); algo={cfg.algo.name} unrolls a learned model"
        )
    _check_tree_values(cfg)
    if cfg.backend.reanalyzers and (cfg.backend.name != "ray" or cfg.algo.name not in LATENT):
        raise ValueError(
            f"backend.reanalyzers={cfg.backend.reanalyzers} needs backend=ray and a learned "
            f"model (algo={' | '.join(LATENT)}), got backend={cfg.backend.name}, "
            f"algo={cfg.algo.name}"
        )
    if cfg.backend.evaluators and (cfg.backend.name != "ray" or kind == "text"):
        raise ValueError(
            f"backend.evaluators={cfg.backend.evaluators} needs backend=ray and a game (a "
            f"language model evaluates between rounds), got backend={cfg.backend.name}, "
            f"game.kind={kind}"
        )
    if cfg.backend.name == "ray" and kind == "text" and cfg.backend.max_weight_lag:
        raise ValueError(
            f"backend.max_weight_lag={cfg.backend.max_weight_lag}: a language model's round "
            "decodes its prompts on Ray with the round's weights; use backend.max_weight_lag=0"
        )
    _check_devices(cfg)
    if cfg.algo.name == "supervised":
        _check_supervised(cfg)
    expected = algorithm.search_policy
    if expected is not None and cfg.search.policy != expected:
        raise ValueError(
            f"algo {cfg.algo.name} searches with search.policy={expected}, got "
            f"{cfg.search.policy!r}"
        )


def _check_tree_values(cfg: TrainConfig) -> None:
    algo = cfg.algo
    if not algo.tree_value_weight >= 0:
        raise ValueError(
            f"algo.tree_value_weight must be >= 0 (0 = off), got {algo.tree_value_weight}"
        )
    for key in ("tree_value_min_visits", "tree_value_searches"):
        least = 1 if key == "tree_value_min_visits" else 0
        if getattr(algo, key) < least:
            raise ValueError(f"algo.{key} must be >= {least}, got {getattr(algo, key)}")
    if not algo.tree_value_weight:
        if algo.tree_value_searches:
            raise ValueError(
                f"algo.tree_value_searches={algo.tree_value_searches} searches positions for "
                "their tree values: it needs algo.tree_value_weight > 0"
            )
        return
    if algo.name != "chance_alphazero":
        raise ValueError(
            f"algo.tree_value_weight={algo.tree_value_weight} trains on the search tree's game "
            f"states (algo=chance_alphazero); algo={algo.name} has none to observe"
        )
    if cfg.backend.name != "embedded":
        raise ValueError(
            f"algo.tree_value_weight={algo.tree_value_weight} needs backend=embedded (the Ray "
            f"actors do not send their trees' targets yet), got backend={cfg.backend.name}"
        )


def _check_q_td_steps(algo) -> None:
    if algo.q_td_steps == 0:
        return
    if algo.name != "stochastic_muzero":
        raise ValueError(
            f"algo.q_td_steps={algo.q_td_steps} sets the horizon of Stochastic MuZero's "
            f"afterstate Q target; algo={algo.name} has no afterstates (use 0)"
        )
    if not 0 < algo.q_td_steps <= algo.td_steps:
        raise ValueError(
            f"algo.q_td_steps must lie in [0, algo.td_steps={algo.td_steps}] (0 = td_steps), "
            f"got {algo.q_td_steps}"
        )


STRATEGIES = ("auto", "ddp")


def _check_devices(cfg: TrainConfig) -> None:
    """The learner's devices: DDP slices the global batch, so it must divide evenly."""
    trainer = cfg.trainer
    if trainer.strategy not in STRATEGIES:
        raise ValueError(
            f"trainer.strategy must be one of {' | '.join(STRATEGIES)} (auto: DDP when "
            f"trainer.devices > 1), got {trainer.strategy!r}"
        )
    if trainer.devices == 1:
        return
    if cfg.game.kind == "text":
        raise ValueError(
            f"trainer.devices={trainer.devices}: a language model's rounds train on one device; "
            "use trainer.devices=1 (backend=ray spreads its decoding instead)"
        )
    if trainer.batch_size % trainer.devices:
        raise ValueError(
            f"trainer.batch_size={trainer.batch_size} must be a multiple of trainer.devices="
            f"{trainer.devices}: every device trains on an equal slice of each batch"
        )


def _check_supervised(cfg: TrainConfig) -> None:
    make = "make it with: python -m games.chess_labels --out <file>"
    if not cfg.algo.labels:
        raise ValueError(f"algo=supervised needs algo.labels=<file>, a teacher's labels; {make}")
    if not Path(cfg.algo.labels).is_file():
        raise ValueError(f"algo.labels={cfg.algo.labels} does not exist; {make}")
    if cfg.backend.name != "embedded" or cfg.trainer.devices != 1:
        raise ValueError(
            "algo=supervised trains on one device with backend=embedded (it plays no games), "
            f"got backend={cfg.backend.name}, trainer.devices={cfg.trainer.devices}"
        )
