"""Exhaustive play: a deterministic agent against every opponent move at every turn.

Matches only sample the lines an opponent happens to choose: 200 games against minimax, which
picks among optimal moves only, never show how the agent answers a bad move it has not seen.
Perfect play means never losing, in either seat, against any opponent; for a game as small as
tic-tac-toe every line can be walked. The agent's move is fixed by the position (its search is
deterministic), and the opponent branches into every legal move, so each seat's games form a
tree whose leaves are all the games the agent can be made to play. Positions reached by several
move orders are searched once (merged by their string form and player to move, which is exact
for games whose future depends only on the position, as tic-tac-toe's), and the lines through
them are counted, not replayed: tic-tac-toe needs a few hundred searches per seat.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from games import BoardGame


@dataclass(frozen=True)
class SeatResult:
    """One seat's games against every opponent: ``lines`` complete games (one per sequence of
    opponent moves), by outcome for the agent; ``positions`` distinct positions the agent moved
    in (one search each); ``losing_line`` the moves of one lost game (empty if none)."""

    lines: int
    wins: int
    draws: int
    losses: int
    positions: int
    losing_line: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """Points per line: win 1, draw 0.5 (as a match's score)."""
        return (self.wins + 0.5 * self.draws) / max(1, self.lines)


SEAT_LABELS = {"first": "every line, 1st", "second": "every line, 2nd"}  # table rows


@dataclass(frozen=True)
class ExhaustiveResult:
    first: SeatResult
    second: SeatResult

    @property
    def perfect(self) -> bool:
        return self.first.losses == 0 and self.second.losses == 0

    @property
    def losing_lines(self) -> int:
        return self.first.losses + self.second.losses

    def as_dict(self) -> dict:
        return {"first": asdict(self.first), "second": asdict(self.second)}


def _key(state) -> tuple[str, int]:
    return str(state), state.current_player()


def play_exhaustively(
    game: BoardGame, agent, *, max_positions: int = 1_000_000
) -> ExhaustiveResult:
    """``agent`` (``choose(states, rng) -> [B] actions``, deterministic) in both seats against
    every move of its opponent. Raises ValueError past ``max_positions`` distinct positions (a
    game too large to walk)."""
    first, second = (_play_seat(game, agent, seat, max_positions) for seat in (0, 1))
    return ExhaustiveResult(first, second)


def _play_seat(game: BoardGame, agent, seat: int, max_positions: int) -> SeatResult:
    root = game.new_state()
    layers = [{_key(root): root}]  # distinct positions by number of moves played
    children: dict[tuple, list[tuple]] = {}  # position -> the positions it leads to
    came_from: dict[tuple, tuple[tuple, str]] = {}  # one (parent, move name) per position
    searched = 0
    while layers[-1]:
        layer, following = layers[-1], {}
        depth = len(layers) - 1
        moving = [k for k, s in layer.items() if not _over(s, depth, game)]
        agent_keys = [k for k in moving if layer[k].current_player() == seat]
        picks = {}
        if agent_keys:
            chosen = agent.choose([layer[k] for k in agent_keys], np.random.default_rng(0))
            picks = dict(zip(agent_keys, np.asarray(chosen).tolist(), strict=True))
            searched += len(agent_keys)
        for key in moving:
            state = layer[key]
            moves = [picks[key]] if key in picks else state.legal_actions()
            children[key] = []
            for move in moves:
                child = state.child(int(move))
                child_key = _key(child)
                children[key].append(child_key)
                if child_key not in following:
                    following[child_key] = child
                    came_from.setdefault(child_key, (key, state.action_to_string(int(move))))
        if sum(map(len, layers)) + len(following) > max_positions:
            raise ValueError(
                f"{game.name} has more than {max_positions} positions against a fixed agent; "
                "exhaustive play is for small games (tic-tac-toe)"
            )
        layers.append(following)
    counts: dict[tuple, np.ndarray] = {}  # position -> lines won, drawn, lost by the agent
    for depth in range(len(layers) - 1, -1, -1):
        for key, state in layers[depth].items():
            if key in children:
                counts[key] = sum(counts[c] for c in children[key])
            else:
                counts[key] = _outcome(state, seat)
    wins, draws, losses = (int(n) for n in counts[_key(root)])
    return SeatResult(
        lines=wins + draws + losses,
        wins=wins,
        draws=draws,
        losses=losses,
        positions=searched,
        losing_line=_a_losing_line(layers, counts, came_from),
    )


def _over(state, depth: int, game: BoardGame) -> bool:
    return state.is_terminal() or depth >= game.max_moves


def _outcome(state, seat: int) -> np.ndarray:
    """[win, draw, loss] for the agent: one line ends here (a move limit counts as a draw)."""
    score = np.sign(state.returns()[seat]) if state.is_terminal() else 0
    return np.array([score > 0, score == 0, score < 0], np.int64)


def _a_losing_line(layers, counts, came_from) -> tuple[str, ...]:
    for layer in layers:
        for key, state in layer.items():
            if state.is_terminal() and counts[key][2]:
                moves = []
                while key in came_from:
                    key, move = came_from[key]
                    moves.append(move)
                return tuple(reversed(moves))
    return ()
