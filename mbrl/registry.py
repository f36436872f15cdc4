"""What the core can train: game kinds and algorithms, registered by the packages that own them.

The core (`mbrl`) registers its own below; a package built on it (`llm_bridge`) registers its
kinds and algorithms when imported, so the core never imports it. The command-line layer, the
one place that sees every package, imports them and dispatches by name (`train_function`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Algorithm:
    name: str
    game_kinds: tuple[str, ...]  # the game kinds it trains on
    train: str  # "module:function", imported when a run starts (keeps --help fast)
    search_policy: str | None = None  # the search.policy it needs; None: its own settings


GAME_KINDS: dict[str, str] = {}  # kind -> what it is, for messages
ALGORITHMS: dict[str, Algorithm] = {}


def register_game_kind(kind: str, description: str) -> None:
    GAME_KINDS[kind] = description


def register_algorithm(
    name: str, *, game_kinds: tuple[str, ...], train: str, search_policy: str | None = None
) -> None:
    unknown = [kind for kind in game_kinds if kind not in GAME_KINDS]
    if unknown:
        raise ValueError(f"algorithm {name!r}: unregistered game kinds {unknown}")
    ALGORITHMS[name] = Algorithm(name, tuple(game_kinds), train, search_policy)


def algorithms_for(kind: str) -> list[str]:
    return [name for name, algo in ALGORITHMS.items() if kind in algo.game_kinds]


def train_function(name: str) -> Callable:
    """The ``train(cfg)`` function of a registered algorithm."""
    module, function = ALGORITHMS[name].train.split(":")
    return getattr(importlib.import_module(module), function)


# The core's own: AlphaZero plans with the game's rules (OpenSpiel's simulator); the learned-model
# algorithms plan in their own model, so they train on any environment.
register_game_kind("openspiel", "OpenSpiel board games")
register_game_kind("chess", "chess on python-chess rules with the 1,968 move tokens")
register_game_kind("chance", "OpenSpiel games with dice or random tiles (2048, pig, backgammon)")
register_game_kind("classic", "Gymnasium classic control; no simulator for the search")
register_game_kind("atari", "Atari through ale-py; no simulator for the search")
for _name, _policy in (("alphazero", "puct"), ("gumbel_alphazero", "gumbel")):
    register_algorithm(
        _name, game_kinds=("openspiel", "chess"), train="mbrl.train:train", search_policy=_policy
    )
# A teacher's labels (mbrl.supervised): AlphaZero's network and objective, no self-play.
register_algorithm(
    "supervised", game_kinds=("chess",), train="mbrl.train:train", search_policy=None
)
for _name, _policy in (("muzero", "puct"), ("gumbel_muzero", "gumbel"), ("efficientzero", "puct")):
    register_algorithm(
        _name,
        game_kinds=("openspiel", "chance", "classic", "atari"),
        train="mbrl.train:train",
        search_policy=_policy,
    )
# The reference for Stochastic MuZero: AlphaZero's search on the true game and its true chance
# (exact expectations at chance nodes), learning n-step value targets like the learned models.
register_algorithm(
    "chance_alphazero", game_kinds=("chance",), train="mbrl.train:train", search_policy=None
)
# Stochastic MuZero plans with afterstates and learned chance codes: PUCT (the paper) or Gumbel.
register_algorithm(
    "stochastic_muzero",
    game_kinds=("chance", "openspiel", "classic"),  # its networks are MLPs (no Atari torso)
    train="mbrl.train:train",
    search_policy=None,
)
