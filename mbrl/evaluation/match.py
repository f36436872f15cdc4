"""Matches between two players over many games in lockstep, both seats.

Half the games put the agent first, half second. Each ply, the states where the agent is to move
go to it in one batch and the rest to the opponent, so a search agent costs one batched search
per ply whatever the number of games.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from games import BoardGame


@dataclass
class MatchResult:
    opponent: str
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    wins_first: int = 0  # as the first player
    losses_first: int = 0
    wins_second: int = 0
    losses_second: int = 0

    @property
    def score(self) -> float:
        """Points per game: win 1, draw 0.5."""
        return (self.wins + 0.5 * self.draws) / max(1, self.games)

    def as_dict(self) -> dict:
        return {**asdict(self), "score": self.score}


def random_openings(game: BoardGame, num_games: int, plies: int, seed: int) -> list:
    """Start states after ``plies`` uniformly random moves, the same for games ``2p`` and
    ``2p + 1`` (one pair per opening, the seats swapped), so that two deterministic players
    still meet in varied positions and neither seat is favoured."""
    states = []
    for pair in range((num_games + 1) // 2):
        rng = np.random.default_rng([seed, pair])
        state = game.new_state()
        for _ in range(plies):
            if state.is_terminal():
                break
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.integers(len(legal)))])
        states += [state, state.clone()]
    return states[:num_games]


def play_match(
    game: BoardGame,
    agent,
    opponent,
    num_games: int,
    *,
    seed: int = 0,
    max_moves: int = 0,
    opening_plies: int = 0,
) -> MatchResult:
    """``agent`` against ``opponent`` (anything with ``choose(states, rng)``), ``num_games``
    games split over both seats, optionally from random openings of ``opening_plies`` moves;
    the result is from the agent's point of view."""
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    if opening_plies < 0:
        raise ValueError(f"opening_plies must be >= 0, got {opening_plies}")
    rng = np.random.default_rng(seed)
    agent_seat = np.arange(num_games) % 2  # agent plays first in even games
    states = random_openings(game, num_games, opening_plies, seed)
    moves = np.array([len(s.history()) for s in states], np.int64)
    limit = max_moves or game.max_moves
    active = [b for b in range(num_games) if not states[b].is_terminal()]
    while active:
        agent_turn = [b for b in active if states[b].current_player() == agent_seat[b]]
        other_turn = [b for b in active if states[b].current_player() != agent_seat[b]]
        for player, batch in ((agent, agent_turn), (opponent, other_turn)):
            if batch:
                actions = player.choose([states[b] for b in batch], rng)
                for b, action in zip(batch, actions.tolist(), strict=True):
                    states[b].apply_action(int(action))
                    moves[b] += 1
        active = [b for b in active if not states[b].is_terminal() and moves[b] < limit]
    result = MatchResult(opponent=getattr(opponent, "name", "opponent"), games=num_games)
    for b, state in enumerate(states):
        outcome = state.returns()[agent_seat[b]] if state.is_terminal() else 0.0
        first = agent_seat[b] == 0
        if outcome > 0:
            result.wins += 1
            result.wins_first += int(first)
            result.wins_second += int(not first)
        elif outcome < 0:
            result.losses += 1
            result.losses_first += int(first)
            result.losses_second += int(not first)
        else:
            result.draws += 1
    return result
