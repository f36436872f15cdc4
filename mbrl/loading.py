"""Rebuild a trained agent (game, network, search settings) from a checkpoint."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from games import BoardGame
from mbrl.agent import SearchAgent
from mbrl.checkpoint import METADATA_KEY, check_compatible, load_checkpoint
from mbrl.config import ModelConfig
from mbrl.networks import AlphaZeroNet
from mbrl.selfplay.planner import SearchSettings


@dataclasses.dataclass
class LoadedAgent:
    game: BoardGame
    network: AlphaZeroNet
    settings: SearchSettings
    metadata: dict
    path: Path

    def agent(self, num_simulations: int | None = None, name: str = "agent") -> SearchAgent:
        return SearchAgent(
            self.game, self.network, self.settings, num_simulations=num_simulations, name=name
        )


def load_agent(path: str | Path, game: BoardGame | None = None) -> LoadedAgent:
    """Load ``path`` (a ``.ckpt`` file or a run directory). With ``game`` given, refuse a
    checkpoint trained for another game."""
    checkpoint = load_checkpoint(path)
    metadata = checkpoint[METADATA_KEY]
    spec = metadata["game"]
    if game is None:
        game = BoardGame(
            spec["name"], spec["params"], max_moves=metadata["config"]["game"]["max_moves"]
        )
    check_compatible(metadata, game.spec, f"checkpoint {path}")
    model = ModelConfig(**metadata["model"])
    network = AlphaZeroNet(
        game.obs_shape,
        game.num_actions,
        channels=model.channels,
        blocks=model.blocks,
        value_hidden=model.value_hidden,
    )
    weights = {
        k.removeprefix("network."): v
        for k, v in checkpoint["state_dict"].items()
        if k.startswith("network.")
    }
    try:
        network.load_state_dict(weights)
    except RuntimeError as error:
        raise ValueError(
            f"checkpoint {path} does not match the network it describes ({model}): {error}"
        ) from error
    settings = SearchSettings(**metadata["search"])
    return LoadedAgent(game, network.eval(), settings, metadata, Path(path))
