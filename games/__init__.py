"""Games behind one small protocol: batched ``reset``/``step`` returning ``TimeStep``."""

from games.openspiel import TESTED_GAMES, BoardGame, BoardGameEnv, Transition
from games.timestep import TimeStep

__all__ = ["TESTED_GAMES", "BoardGame", "BoardGameEnv", "TimeStep", "Transition"]
