"""OpenSpiel board games behind the framework's game protocol.

Any two-player, zero-sum, sequential, deterministic, perfect-information OpenSpiel game loads by
name and parameters. ``BoardGame`` is the single-game rule book (observations, legal masks,
clone-and-apply on raw states, which AlphaZero's search uses as its model); ``BoardGameEnv`` plays
B of them in lockstep and returns ``TimeStep``s.

Observations are from the perspective of the player to move. For games whose board is symmetric
between the players (tic-tac-toe, Connect Four) the two players' planes are swapped when the second
player moves, so both seats share what the network learns. Every other game gets OpenSpiel's tensor
for the player to move plus one constant plane holding who is to move.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyspiel

from games.timestep import TimeStep, batch_actions, reset_indices

# The games the framework is tested on; any other game of the same class also works.
TESTED_GAMES = ("tic_tac_toe", "connect_four", "othello", "breakthrough", "hex", "chess", "go")

# (plane of player 0's stones, plane of player 1's stones) for boards symmetric between players.
_PLAYER_PLANES = {"tic_tac_toe": (2, 1), "connect_four": (0, 1)}


class Transition(NamedTuple):
    """The result of one move on a raw state."""

    state: Any  # the new pyspiel.State (a clone: the parent is untouched)
    reward: float  # to the player who moved
    terminal: bool
    turn_changed: bool  # the player to move differs from the player who moved


def to_play_shape(raw_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape `with_to_play` gives an observation tensor of ``raw_shape``."""
    if len(raw_shape) == 3:
        return (raw_shape[0] + 1, *raw_shape[1:])
    return (int(np.prod(raw_shape)) + 1,)


def with_to_play(raw: np.ndarray, player: int) -> np.ndarray:
    """OpenSpiel's tensor plus who is to move: one more plane for ``[C, H, W]`` boards, one
    more feature (after flattening) otherwise."""
    if raw.ndim == 3:
        return np.concatenate([raw, np.full((1, *raw.shape[1:]), float(player), np.float32)])
    return np.append(raw.reshape(-1), np.float32(player))


def _check_game_class(name: str, game: pyspiel.Game) -> None:
    """Refuse games outside the class AlphaZero's two-player search assumes, saying why."""
    kind = game.get_type()
    reasons = []
    if game.num_players() != 2:
        reasons.append(f"it has {game.num_players()} players (2 are needed)")
    if kind.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        reasons.append("its moves are simultaneous (sequential moves are needed)")
    if kind.chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC:
        reasons.append("it has chance nodes (a deterministic game is needed)")
    if kind.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        reasons.append("it has hidden information (perfect information is needed)")
    if kind.utility != pyspiel.GameType.Utility.ZERO_SUM:  # the -1 discount assumes it
        reasons.append(f"its utility is {kind.utility.name} (zero-sum is needed)")
    if not kind.provides_observation_tensor:
        reasons.append("it provides no observation tensor")
    if reasons:
        raise ValueError(
            f"game {name!r} is not a two-player, zero-sum, sequential, deterministic, "
            f"perfect-information game: " + "; ".join(reasons) + f". Tested games: {TESTED_GAMES}."
        )


def _load(name: str, params: dict[str, Any]) -> pyspiel.Game:
    if name not in pyspiel.registered_names():
        raise ValueError(
            f"unknown game {name!r}: expected one of {TESTED_GAMES} or another registered "
            f"OpenSpiel game of the same class (see pyspiel.registered_names())"
        )
    # Checked here: OpenSpiel would print its own message to stderr before raising.
    defaults = pyspiel.load_game(name).get_parameters()
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(
            f"game {name!r} has no parameter {', '.join(map(repr, unknown))}; its parameters "
            f"(with defaults): {defaults or 'none'}"
        )
    try:
        game = pyspiel.load_game(name, dict(params))
    except pyspiel.SpielError as error:
        raise ValueError(f"game {name!r} rejected parameters {dict(params)}: {error}") from error
    shape = (
        tuple(game.observation_tensor_shape())
        if game.get_type().provides_observation_tensor
        else (1,)
    )
    if min(shape, default=0) < 1 or game.num_distinct_actions() < 1:
        raise ValueError(
            f"game {name!r} with parameters {dict(params)} has no playable board (observation "
            f"shape {list(shape)}, {game.num_distinct_actions()} actions); its parameters "
            f"(with defaults): {defaults}"
        )
    return game


class BoardGame:
    """One OpenSpiel game's rules, on raw ``pyspiel.State`` objects."""

    def __init__(self, name: str, params: dict[str, Any] | None = None, *, max_moves: int = 0):
        self.name = name
        self.params = dict(params or {})
        self.game = _load(name, self.params)
        _check_game_class(name, self.game)
        self.num_actions = int(self.game.num_distinct_actions())
        if max_moves < 0:
            raise ValueError(f"max_moves must be >= 0 (0 = the game's own limit), got {max_moves}")
        self.max_moves = int(max_moves) or int(self.game.max_game_length())
        shape = tuple(self.game.observation_tensor_shape())
        self._raw_shape = shape
        self._planes = _PLAYER_PLANES.get(name)
        if self._planes is None:  # append a to-play plane (or feature for flat tensors)
            shape = to_play_shape(shape)
        self.obs_shape: tuple[int, ...] = shape

    def __repr__(self) -> str:
        return f"BoardGame({self.name!r}, {self.params})"

    @property
    def spec(self) -> dict[str, Any]:
        """What a checkpoint records to refuse being loaded for another game."""
        return {
            "name": self.name,
            "params": self.params,
            "num_actions": self.num_actions,
            "obs_shape": list(self.obs_shape),
        }

    def new_state(self):
        return self.game.new_initial_state()

    def observation(self, state) -> np.ndarray:
        """``obs_shape`` float32 from the point of view of the player to move."""
        player = max(state.current_player(), 0)
        raw = np.asarray(state.observation_tensor(player), np.float32).reshape(self._raw_shape)
        if self._planes is not None:
            if player == 1:
                first, second = self._planes
                raw = raw.copy()
                raw[[first, second]] = raw[[second, first]]
            return raw
        return with_to_play(raw, player)

    def legal_mask(self, state) -> np.ndarray:
        mask = np.zeros(self.num_actions, np.bool_)
        if not state.is_terminal():
            mask[state.legal_actions()] = True
        return mask

    def apply(self, state, action: int) -> Transition:
        """Clone ``state`` and play ``action``; the parent is left as it was."""
        if state.is_terminal():
            raise ValueError(f"{self.name}: cannot play action {action} in a finished game")
        mover = state.current_player()
        child = state.clone()
        child.apply_action(int(action))
        terminal = child.is_terminal()
        reward = float(child.returns()[mover]) if terminal else 0.0
        turn_changed = not terminal and child.current_player() != mover
        return Transition(child, reward, terminal, turn_changed)

    def render(self, state) -> str:
        return str(state)

    def action_to_string(self, state, action: int) -> str:
        return state.action_to_string(state.current_player(), int(action))


class BoardGameEnv:
    """B games of one ``BoardGame`` in lockstep.

    ``step`` moves every unfinished game; finished games stay finished (their action is ignored)
    until ``reset`` is called for them, so the caller decides when a slot starts a new game.
    """

    def __init__(self, game: BoardGame, batch_size: int):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.game = game
        self.batch_size = batch_size
        self.states = [game.new_state() for _ in range(batch_size)]
        self.moves = np.zeros(batch_size, np.int64)
        self._reward = np.zeros(batch_size, np.float32)
        self._truncated = np.zeros(batch_size, np.bool_)
        # Each game's observation and legal mask, rebuilt only when its state changes.
        self._obs = np.stack([game.observation(s) for s in self.states])
        self._legal = np.stack([game.legal_mask(s) for s in self.states])

    def reset(self, seeds=None, indices=None) -> TimeStep:
        """Start new games in ``indices`` (all by default). Board games are deterministic, so
        ``seeds`` is accepted for the protocol and unused."""
        del seeds
        indices = reset_indices(indices, self.batch_size)
        for b in indices:
            self.states[b] = self.game.new_state()
            self.moves[b] = 0
            self._reward[b] = 0.0
            self._truncated[b] = False
            self._observe(b)
        return self.timestep()

    def step(self, actions) -> TimeStep:
        actions = batch_actions(actions, self.batch_size)
        for b, action in enumerate(actions.tolist()):
            state = self.states[b]
            if state.is_terminal() or self._truncated[b]:
                self._reward[b] = 0.0
                continue
            if action not in state.legal_actions():
                raise ValueError(
                    f"game {b}: action {action} is illegal; legal: {state.legal_actions()}"
                )
            transition = self.game.apply(state, action)
            self.states[b] = transition.state
            self._reward[b] = transition.reward
            self.moves[b] += 1
            self._truncated[b] = not transition.terminal and self.moves[b] >= self.game.max_moves
            self._observe(b)
        return self.timestep()

    def play_opening(self, index: int, rng: np.random.Generator, most: int) -> int:
        """Play 0..``most`` (uniform) random legal moves in game ``index``, stopping short of
        any move that would end it; returns how many were played. Self-play's random openings:
        moves nobody searched, so they are not steps of the game's record."""
        played = 0
        for _ in range(rng.integers(0, most + 1)):
            state = self.states[index]
            action = int(rng.choice(np.flatnonzero(self.game.legal_mask(state))))
            transition = self.game.apply(state, action)
            if transition.terminal:
                break
            self.states[index] = transition.state
            self.moves[index] += 1
            played += 1
        self._observe(index)
        return played

    def state_dict(self) -> dict:
        """The games in progress, as their move lists (OpenSpiel states do not pickle)."""
        return {"histories": [s.history() for s in self.states]}

    def load_state_dict(self, state: dict) -> None:
        histories = state["histories"]
        if len(histories) != self.batch_size:
            raise ValueError(
                f"checkpoint holds {len(histories)} games in progress; this run plays "
                f"{self.batch_size} at once (trainer.num_games)"
            )
        for b, history in enumerate(histories):
            game_state = self.game.new_state()
            for action in history:  # checked: OpenSpiel applies an out-of-range move blindly
                if game_state.is_terminal() or int(action) not in game_state.legal_actions():
                    raise ValueError(
                        f"checkpoint's game {b} in progress plays move {action} illegally after "
                        f"{game_state.history()}; the checkpoint is corrupt or from another game"
                    )
                game_state.apply_action(int(action))
            self.states[b] = game_state
            self.moves[b] = len(history)
            self._reward[b] = 0.0
            self._truncated[b] = (
                not game_state.is_terminal() and len(history) >= self.game.max_moves
            )
            self._observe(b)

    def _observe(self, b: int) -> None:
        self._obs[b] = self.game.observation(self.states[b])
        self._legal[b] = self.game.legal_mask(self.states[b])

    def timestep(self) -> TimeStep:
        states = self.states
        terminated = np.array([s.is_terminal() for s in states], np.bool_)
        return TimeStep(
            obs=self._obs.copy(),
            legal=self._legal.copy(),
            to_play=np.array(
                [-1 if t else s.current_player() for s, t in zip(states, terminated, strict=True)]
            ),
            reward=self._reward.copy(),
            terminated=terminated,
            truncated=self._truncated & ~terminated,
        )
