"""A two-player game with chance (backgammon, pig) played against a uniformly random opponent.

`RandomOpponentMatch.measure(agent)` plays ``games`` games in lockstep, the agent taking the first
seat in even games and the second in odd ones, each game's dice drawn from its own seed, and
returns the agent's mean final return (backgammon: +1 a win, +2 a gammon, +3 a backgammon;
negative for losses) and the share of games it won. A game cut off by ``max_moves`` scores what
the game gives its unfinished state (0 in both). The agent is asked only about the games where
it is to move, with their states (``agent.act(timestep, states)``), as in self-play.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from games.chance import ChanceGame, ChanceGameEnv


class RandomOpponentMatch:
    def __init__(
        self,
        name: str,
        params: dict[str, Any],
        *,
        games: int = 32,
        max_moves: int = 0,
        seed: int = 0,
    ):
        if games < 2:
            raise ValueError(f"a match needs at least 2 games (one per seat), got {games}")
        self.game = ChanceGame(name, params, max_moves=max_moves)
        if self.game.num_players != 2:
            raise ValueError(f"{name!r} has {self.game.num_players} players; a match needs 2")
        self.games, self.seed = int(games), int(seed)

    def measure(self, agent) -> dict[str, float]:
        env = ChanceGameEnv(self.game, self.games, seed=self.seed)
        timestep = env.reset(seeds=[self.seed + g for g in range(self.games)])
        seat = np.arange(self.games) % 2
        opponent = np.random.default_rng([self.seed, 1])
        while True:
            playing = timestep.to_play >= 0
            playing &= ~timestep.truncated
            if not playing.any():
                break
            actions = np.zeros(self.games, np.int64)
            ours = np.flatnonzero(playing & (timestep.to_play == seat))
            if len(ours):
                mine = timestep._replace(
                    **{field: getattr(timestep, field)[ours] for field in timestep._fields}
                )
                actions[ours] = agent.act(mine, [env.states[g] for g in ours])
            for g in np.flatnonzero(playing & (timestep.to_play != seat)):
                actions[g] = opponent.choice(np.flatnonzero(timestep.legal[g]))
            timestep = env.step(actions)
        returns = np.array([self.game.returns(env.states[g])[seat[g]] for g in range(self.games)])
        return {
            "score_vs_random": float(returns.mean()),
            "wins_vs_random": float((returns > 0).mean()),
        }
