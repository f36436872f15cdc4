"""AlphaZero's network for a board game, from the ``model`` config: the chess transformer over
board tokens for chess with move tokens, the residual tower for every other game."""

from __future__ import annotations

import torch

from mbrl.networks.alphazero import AlphaZeroNet


def board_network(game, model_cfg) -> torch.nn.Module:
    """AlphaZero's network for ``game``: the chess transformer over board tokens for chess
    with move tokens, else the residual tower."""
    if game.name == "chess_tokens":
        from mbrl.networks.chess_transformer import ChessNetSettings, ChessTransformer

        settings = ChessNetSettings(
            layers=model_cfg.blocks,
            heads=model_cfg.heads,
            width=model_cfg.channels,
            value_bins=model_cfg.value_bins,
        )
        return ChessTransformer(game.obs_shape[0], settings)
    return AlphaZeroNet(
        game.obs_shape,
        game.num_actions,
        channels=model_cfg.channels,
        blocks=model_cfg.blocks,
        value_hidden=model_cfg.value_hidden,
    )
