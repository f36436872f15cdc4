"""Games behind one small protocol: batched ``reset``/``step`` returning ``TimeStep``.

Names load on first use (PEP 562): reading a settings dataclass (`games.atari_protocol`, part of
the config schema that ``--help`` needs) does not load OpenSpiel or Gymnasium.
"""

from __future__ import annotations

import importlib

_SOURCES = {
    "TESTED_GAMES": "openspiel",
    "BoardGame": "openspiel",
    "BoardGameEnv": "openspiel",
    "Transition": "openspiel",
    "ChanceGame": "chance",
    "ChanceGameEnv": "chance",
    "ClassicControlEnv": "classic",
    "TimeStep": "timestep",
}
__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'games' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"games.{_SOURCES[name]}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SOURCES])
