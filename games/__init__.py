"""Games behind one small protocol: batched ``reset``/``step`` returning ``TimeStep``."""

from games.classic import ClassicControlEnv
from games.openspiel import TESTED_GAMES, BoardGame, BoardGameEnv, Transition
from games.timestep import TimeStep

__all__ = [
    "TESTED_GAMES",
    "BoardGame",
    "BoardGameEnv",
    "ClassicControlEnv",
    "TimeStep",
    "Transition",
]
