"""Build a batched environment (and its learned-model network) from the ``game`` config.

Learned-model agents train on any protocol environment: OpenSpiel board games (through
``BoardGameEnv``), OpenSpiel games with chance (``ChanceGameEnv``: 2048, Pig, backgammon),
Gymnasium classic control, or Atari with EfficientZero's protocol. This module
is the one place that maps ``game.kind`` to an environment and says what the replay and the
network need to know about it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import torch

from games import BoardGame, BoardGameEnv, ClassicControlEnv
from mbrl.networks.muzero import MuZeroNet


class Environment(NamedTuple):
    env: Any  # reset(seeds, indices) / step(actions) -> TimeStep, batch_size B
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    num_actions: int
    frame_stack: int  # frames stacked along the observation's first axis
    two_player: bool
    game: BoardGame | None  # the rule book of a board game (for matches), else None
    spec: dict  # what a checkpoint records about the game


def make_environment(game_cfg, batch_size: int, *, seed: int, training: bool = True) -> Environment:
    kind = game_cfg.kind
    if kind == "openspiel":
        game = BoardGame(game_cfg.name, game_cfg.params, max_moves=game_cfg.max_moves)
        return _board_environment(game, batch_size)
    if kind == "chess":
        from games.chess_game import ChessGame  # python-chess, loaded for chess runs only

        game = ChessGame(game_cfg.params, max_moves=game_cfg.max_moves)
        return _board_environment(game, batch_size)
    if kind == "chance":
        from games.chance import ChanceGame, ChanceGameEnv

        game = ChanceGame(game_cfg.name, game_cfg.params, max_moves=game_cfg.max_moves)
        env = ChanceGameEnv(game, batch_size, seed=seed)
        spec = {"kind": "chance", **game.spec}
        two_player = game.num_players == 2
        return Environment(
            env, game.obs_shape, np.dtype(np.float32), game.num_actions, 1, two_player, None, spec
        )
    if kind == "classic":
        env = ClassicControlEnv(game_cfg.name, batch_size)
        return Environment(
            env, env.obs_shape, np.dtype(np.float32), env.num_actions, 1, False, None, env.spec
        )
    if kind == "atari":
        from games.atari import AtariEnv, AtariSettings

        settings = AtariSettings(game=game_cfg.name, **dataclasses.asdict(game_cfg.atari))
        settings = settings.train() if training else settings.evaluation()
        env = AtariEnv(settings, batch_size, seed=seed)
        spec = {
            "kind": "atari",
            "name": settings.rom_id,
            "obs_shape": list(env.obs_shape),
            "num_actions": env.num_actions,
        }
        return Environment(
            env,
            tuple(env.obs_shape),
            np.dtype(np.uint8),
            env.num_actions,
            settings.frame_stack,
            False,
            None,
            spec,
        )
    raise ValueError(f"game.kind must be openspiel, chess, chance, classic or atari, got {kind!r}")


def _board_environment(game, batch_size: int) -> Environment:
    """B games of a two-player board game (OpenSpiel's or chess with move tokens) in lockstep."""
    return Environment(
        BoardGameEnv(game, batch_size),
        game.obs_shape,
        np.dtype(np.float32),
        game.num_actions,
        1,
        True,
        game,
        game.spec,
    )


def build_latent_network(obs_shape: tuple[int, ...], num_actions: int, cfg) -> torch.nn.Module:
    if cfg.algo.name == "stochastic_muzero":
        from mbrl.networks.stochastic_muzero import StochasticMuZeroNet

        return StochasticMuZeroNet(obs_shape, num_actions, cfg.algo.chance_codes, cfg.model)
    value_prefix = cfg.algo.value_prefix_horizon > 0
    return MuZeroNet(obs_shape, num_actions, cfg.model, value_prefix=value_prefix)
