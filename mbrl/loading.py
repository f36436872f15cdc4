"""Rebuild a trained agent (game, network, search settings) from a checkpoint.

AlphaZero checkpoints give a ``SearchAgent`` over the true game; MuZero-family checkpoints one
that plans in its own learned model (Stochastic MuZero: with its chance codes); the true-chance
AlphaZero one over the chance game's simulator. ``game`` is the board game's rule book, or
``None`` for single-agent environments (CartPole, Atari) and games with chance, which are played
as episodes (``environment(...)`` builds one in evaluation mode).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from types import SimpleNamespace

import torch

from games import BoardGame
from games.atari_protocol import AtariProtocol
from mbrl.agent import SearchAgent
from mbrl.checkpoint import METADATA_KEY, check_compatible, load_checkpoint, network_weights
from mbrl.config import LATENT_ALGORITHMS, AlgoConfig, GameConfig, ModelConfig
from mbrl.environments import Environment, build_latent_network, make_environment
from mbrl.networks.board import board_network
from search import SearchSettings


@dataclasses.dataclass
class LoadedAgent:
    game: BoardGame | None
    network: torch.nn.Module
    settings: SearchSettings
    metadata: dict
    path: Path

    @property
    def latent(self) -> bool:
        return self.metadata.get("algo") in LATENT_ALGORITHMS

    @property
    def kind(self) -> str:
        return self.metadata["config"]["game"].get("kind", "openspiel")

    @functools.cached_property
    def _chance_game(self):
        from games.chance import ChanceGame

        saved = self.metadata["config"]["game"]
        return ChanceGame(saved["name"], saved["params"], max_moves=saved["max_moves"])

    def chance_game(self):
        """The checkpoint's game with chance (``game.kind=chance``), rebuilt from its config
        once (loading an OpenSpiel game is not free)."""
        return self._chance_game

    @property
    def two_player(self) -> bool:
        if self.kind == "chance":
            return self.chance_game().num_players == 2
        return self.game is not None

    def simulations(self, requested: int, key: str = "simulations") -> int:
        """``requested`` search simulations per move, with -1 meaning the checkpoint's own
        evaluation setting; ``key`` names the setting in the error for other negatives."""
        if requested < -1:
            raise ValueError(
                f"{key} must be >= 0 (0 = the raw policy) or -1 (the checkpoint's evaluation "
                f"setting), got {requested}"
            )
        return self.metadata["config"]["search"]["eval_simulations"] if requested < 0 else requested

    def agent(self, num_simulations: int | None = None, name: str = "agent"):
        return SearchAgent(
            self.search_model(),
            self.settings,
            game=self.game,
            num_simulations=num_simulations,
            name=name,
        )

    def search_model(self):
        """What the agent searches in, as the run's self-play did (`mbrl.parts.search_model`)."""
        from mbrl.parts import search_model

        algo = algo_config(self.metadata["config"]["algo"])
        chance_game = self.chance_game() if self.kind == "chance" else None
        return search_model(
            algo, self.network, two_player=self.two_player, game=self.game, chance_game=chance_game
        )

    def environment(self, batch_size: int, *, seed: int = 0) -> Environment:
        """The checkpoint's environment in evaluation mode (Atari: raw rewards, no life loss)."""
        return make_environment(game_config(self.metadata), batch_size, seed=seed, training=False)


def algo_config(saved: dict) -> AlgoConfig:
    """The run's algorithm settings, without the keys this version does not know (another
    version's training options: none of them changes how a trained network plays)."""
    known = {f.name for f in dataclasses.fields(AlgoConfig)}
    return AlgoConfig(**{key: value for key, value in saved.items() if key in known})


def game_config(metadata: dict) -> GameConfig:
    saved = dict(metadata["config"]["game"])
    saved["atari"] = AtariProtocol(**saved.get("atari", {}))
    return GameConfig(**saved)


def board_game(kind: str, spec: dict, max_moves: int):
    """The rule book a checkpoint's board game was trained on."""
    if kind == "chess":
        from games.chess_game import ChessGame

        return ChessGame(spec["params"], max_moves=max_moves)
    return BoardGame(spec["name"], spec["params"], max_moves=max_moves)


def load_agent(path: str | Path, game: BoardGame | None = None) -> LoadedAgent:
    """Load ``path`` (a ``.ckpt`` file or a run directory). With ``game`` given, refuse a
    checkpoint trained for another game or other observation and action shapes."""
    checkpoint = load_checkpoint(path)
    metadata = checkpoint[METADATA_KEY]
    if "game" not in metadata:  # a language model's run writes the same format
        kind = metadata.get("kind", "another kind")
        raise ValueError(
            f"checkpoint {path} holds no game agent ({kind}); a language model is decoded "
            "with mbrl-decode"
        )
    spec = metadata["game"]
    config = metadata["config"]
    kind = config["game"].get("kind", "openspiel")
    board = kind in ("openspiel", "chess")
    if game is None and board:
        game = board_game(kind, spec, config["game"]["max_moves"])
    if game is not None:
        check_compatible(metadata, game.spec, f"checkpoint {path}")
    # Only the core's fields: the command line's schema may extend the group (LMModelConfig).
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    model = ModelConfig(**{k: v for k, v in metadata["model"].items() if k in known})
    # The true-chance AlphaZero's network is MuZero's (its h and f), like the learned models'.
    if metadata.get("algo") in (*LATENT_ALGORITHMS, "chance_alphazero"):
        shapes = SimpleNamespace(model=model, algo=algo_config(config["algo"]))
        network = build_latent_network(tuple(spec["obs_shape"]), spec["num_actions"], shapes)
    else:
        network = board_network(game, model)
    weights = network_weights(checkpoint)
    try:
        network.load_state_dict(weights)
    except RuntimeError as error:
        raise ValueError(
            f"checkpoint {path} does not match the network it describes ({model}): {error}"
        ) from error
    settings = SearchSettings(**metadata["search"])
    return LoadedAgent(game if board else None, network.eval(), settings, metadata, Path(path))
