"""OpenSpiel games with chance nodes (dice, tile spawns) behind the framework's game protocol.

One- or two-player, sequential, perfect-information OpenSpiel games whose chance is explicit (each
chance node lists its outcomes and their probabilities) load by name and parameters: 2048, pig,
backgammon (and its small variant, ``hyper_backgammon=True``). Two-player games must be zero-sum.
``ChanceGame`` is the single-game rule book on raw ``pyspiel.State`` objects; it splits a move into
the decision and the chance that follows it, Stochastic MuZero's afterstate (Antonoglou et al.
2022, section 3). ``ChanceGameEnv`` plays B of them in lockstep, samples chance with one generator
per game, and returns ``TimeStep``s like ``BoardGameEnv``.

Chance outcome codes are OpenSpiel's chance action ids, used as they are: in 2048, pig and
backgammon they lie in ``range(max_chance_outcomes())`` (checked at each chance node). A code's
meaning can depend on the node: backgammon's opening roll uses codes 0..29 for (who starts, dice),
later rolls codes 0..35 for the dice alone; 2048 uses codes 0..31 (cell * 2 + (tile == 4)), never
32 of its 33.

Rewards are changes of OpenSpiel's returns, so they add up to the game's returns: 2048's returns
grow by the merged tiles of each decision (``state.rewards()`` is no guide there: a chance node
repeats the last decision's reward), pig's and backgammon's are zero until the end.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np
import pyspiel

from games.openspiel import _load, to_play_shape, with_to_play
from games.timestep import TimeStep, batch_actions, reset_indices

# The games the framework is tested on; any other game of the same class also works.
TESTED_GAMES = ("2048", "pig", "backgammon")

# Hyper-backgammon: three checkers each; OpenSpiel's Returns() only looks for fifteen.
_HYPER_CHECKERS = 3
_BACKGAMMON_SCORES = re.compile(r"Scores, X: (\d+), O: (\d+)")


class Afterstate(NamedTuple):
    """A decision played on a raw state, before chance has spoken."""

    state: Any  # a clone: a chance node, or a decision node or terminal when no chance follows
    mover: int  # the player who decided
    reward: float  # the change the decision made to the mover's return
    terminal: bool


class ChanceTransition(NamedTuple):
    """A decision and the chance after it, played through to the next decision or the end."""

    state: Any  # a clone at a decision node or terminal: the parent is untouched
    reward: float  # to the mover: the decision's reward plus what the chance after it added
    terminal: bool
    turn_changed: bool  # the player to move differs from the player who moved
    chance_codes: tuple[int, ...]  # the outcome codes sampled after the decision, in order


def _check_game_class(name: str, game: pyspiel.Game) -> None:
    """Refuse games outside the class this module handles, saying why."""
    kind = game.get_type()
    reasons = []
    if game.num_players() not in (1, 2):
        reasons.append(f"it has {game.num_players()} players (1 or 2 are needed)")
    if kind.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        reasons.append(f"its dynamics are {kind.dynamics.name.lower()} (sequential are needed)")
    if kind.chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC:
        reasons.append("it has no chance nodes (use games.openspiel.BoardGame)")
    elif kind.chance_mode != pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC:
        reasons.append("its chance is sampled (explicit outcome probabilities are needed)")
    if kind.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        reasons.append("it has hidden information (perfect information is needed)")
    if game.num_players() == 2 and kind.utility != pyspiel.GameType.Utility.ZERO_SUM:
        reasons.append(f"its utility is {kind.utility.name} (zero-sum is needed for 2 players)")
    if not kind.provides_observation_tensor:
        reasons.append("it provides no observation tensor")
    if reasons:
        raise ValueError(
            f"game {name!r} is not a one- or two-player (zero-sum), sequential, "
            f"perfect-information game with explicit chance: " + "; ".join(reasons) + ". "
            f"Tested games: {TESTED_GAMES}."
        )


class ChanceGame:
    """One OpenSpiel chance game's rules, on raw ``pyspiel.State`` objects.

    A move is a decision (``apply_decision``) followed by zero or more chance outcomes
    (``apply_chance``), until the next decision node or the end; ``apply`` does both, sampling
    chance with the generator it is given.
    """

    def __init__(self, name: str, params: dict[str, Any] | None = None, *, max_moves: int = 0):
        if name not in pyspiel.registered_names():
            raise ValueError(
                f"unknown game {name!r}: expected one of {TESTED_GAMES} or another registered "
                f"OpenSpiel game of the same class (see pyspiel.registered_names())"
            )
        self.name = name
        self.params = dict(params or {})
        self.game = _load(name, self.params)
        _check_game_class(name, self.game)
        self.num_players = int(self.game.num_players())
        self.num_actions = int(self.game.num_distinct_actions())
        self.num_chance_outcomes = int(self.game.max_chance_outcomes())
        if max_moves < 0:
            raise ValueError(f"max_moves must be >= 0 (0 = the game's own limit), got {max_moves}")
        # Counts decisions only; the game's own limit also counts chance, so it is an upper bound.
        self.max_moves = int(max_moves) or int(self.game.max_game_length())
        self._raw_shape = tuple(self.game.observation_tensor_shape())
        shape = self._raw_shape
        if self.num_players == 2:  # append a to-play plane (or feature for flat tensors)
            shape = to_play_shape(shape)
        # 2048's tensor holds tile values (2 ... max_tile); a network reads one plane per tile
        # exponent better (plane 0: empty cells), as in the Stochastic MuZero paper.
        self._tile_planes = 0
        if name == "2048":
            max_tile = int(self.game.get_parameters()["max_tile"])
            self._tile_planes = max_tile.bit_length()  # log2(max_tile) + 1
            shape = (self._tile_planes, *shape)
        self.obs_shape: tuple[int, ...] = shape
        self._hyper_backgammon = name == "backgammon" and bool(
            self.game.get_parameters()["hyper_backgammon"]
        )

    def __repr__(self) -> str:
        return f"ChanceGame({self.name!r}, {self.params})"

    @property
    def spec(self) -> dict[str, Any]:
        """What a checkpoint records to refuse being loaded for another game."""
        return {
            "name": self.name,
            "params": self.params,
            "num_actions": self.num_actions,
            "num_chance_outcomes": self.num_chance_outcomes,
            "obs_shape": list(self.obs_shape),
        }

    def new_state(self):
        """The initial state; it may be a chance node (2048's first tiles, backgammon's roll)."""
        return self.game.new_initial_state()

    def is_chance(self, state) -> bool:
        return state.is_chance_node()

    def chance_distribution(self, state) -> np.ndarray:
        """``[C]`` float64: the probability of each outcome code at chance node ``state``."""
        if not state.is_chance_node():
            raise ValueError(f"{self.name}: chance_distribution needs a chance node, got {state}")
        distribution = np.zeros(self.num_chance_outcomes, np.float64)
        for code, probability in state.chance_outcomes():
            if not 0 <= code < self.num_chance_outcomes:
                raise ValueError(
                    f"{self.name}: chance outcome {code} lies outside range("
                    f"{self.num_chance_outcomes}) (max_chance_outcomes); its codes need a mapping"
                )
            distribution[code] = probability
        return distribution

    def returns(self, state) -> np.ndarray:
        """``[P]`` float64: each player's return so far (the final score at the end)."""
        returns = np.asarray(state.returns(), np.float64)
        if self._hyper_backgammon and state.is_terminal() and not returns.any():
            # OpenSpiel 2.0.2's Backgammon Returns() declares a winner only at 15 borne-off
            # checkers, so every hyper-backgammon game ends 0-0; the winner bore off all 3.
            # (Where OpenSpiel scores it, returns are not all zero and this is skipped.)
            scores = _BACKGAMMON_SCORES.search(str(state))
            if scores is None:
                raise RuntimeError(f"cannot read hyper-backgammon's scores from:\n{state}")
            borne_off = np.array([int(score) for score in scores.groups()])
            if (borne_off == _HYPER_CHECKERS).any():  # else the turn limit ended it: a draw
                returns = np.where(borne_off == _HYPER_CHECKERS, 1.0, -1.0)
        return returns

    def observation(self, state) -> np.ndarray:
        """``obs_shape`` float32 from the point of view of the player to move (player 0's at a
        chance node or the end). Two-player games get a last plane or feature holding who is
        to move; 2048's board is one-hot planes of the tile exponents ``[log2(max_tile) + 1,
        4, 4]``."""
        player = max(state.current_player(), 0)
        raw = np.asarray(state.observation_tensor(player), np.float32).reshape(self._raw_shape)
        if self._tile_planes:
            exponents = np.log2(np.maximum(raw, 1.0)).astype(np.int64)  # empty -> plane 0
            planes = np.arange(self._tile_planes)[:, None, None] == exponents[None]
            return planes.astype(np.float32)
        if self.num_players == 1:
            return raw
        return with_to_play(raw, player)

    def legal_mask(self, state) -> np.ndarray:
        """``[A]`` bool: the legal decisions; all False at a chance node or the end."""
        mask = np.zeros(self.num_actions, np.bool_)
        if not state.is_terminal() and not state.is_chance_node():
            mask[state.legal_actions()] = True
        return mask

    def apply_decision(self, state, action: int) -> Afterstate:
        """Clone ``state`` and play the (legal) decision ``action``; the parent is untouched."""
        if state.is_terminal() or state.is_chance_node():
            where = "a finished game" if state.is_terminal() else "a chance node"
            raise ValueError(f"{self.name}: cannot play decision {action} at {where}")
        mover = state.current_player()
        child = state.clone()
        child.apply_action(int(action))
        reward = self.returns(child)[mover] - self.returns(state)[mover]
        return Afterstate(child, mover, float(reward), child.is_terminal())

    def apply_chance(self, state, code: int):
        """Clone chance node ``state`` and apply outcome ``code`` (of nonzero probability)."""
        if not state.is_chance_node():
            raise ValueError(
                f"{self.name}: cannot apply chance outcome {code} at a non-chance node"
            )
        if not 0 <= code < self.num_chance_outcomes or not self.chance_distribution(state)[code]:
            raise ValueError(
                f"{self.name}: chance outcome {code} is impossible here; possible: "
                f"{[c for c, _ in state.chance_outcomes()]}"
            )
        child = state.clone()
        child.apply_action(int(code))
        return child

    def resolve_chance(self, state, rng: np.random.Generator) -> tuple[Any, list[int]]:
        """Sample chance outcomes from ``state`` until a decision node or the end; returns that
        state (a clone: ``state`` is untouched) and the codes sampled, in order."""
        state = state.clone()
        codes = []
        while state.is_chance_node():
            codes.append(
                int(rng.choice(self.num_chance_outcomes, p=self.chance_distribution(state)))
            )
            state.apply_action(codes[-1])
        return state, codes

    def replay(self, history) -> tuple[Any, int, list[int]]:
        """The state that ``history`` (``state.history()``: decisions and chance outcomes from
        the start) reaches, each action checked, since OpenSpiel applies an out-of-range one
        blindly: ``(state, decisions played, the codes after the last decision)``. A history
        with an illegal action, or one that stops at a chance node, raises ValueError."""
        game_state, moves, codes = self.new_state(), 0, []
        for action in map(int, history):
            chance = game_state.is_chance_node()
            if game_state.is_terminal():
                legal = False
            elif chance:
                legal = dict(game_state.chance_outcomes()).get(action, 0.0) > 0.0
            else:
                legal = action in game_state.legal_actions()
            if not legal:
                raise ValueError(
                    f"plays {'chance outcome' if chance else 'move'} {action} illegally after "
                    f"{game_state.history()}"
                )
            codes = [*codes, action] if chance else []
            moves += not chance
            game_state.apply_action(action)
        if game_state.is_chance_node():
            raise ValueError(f"stops at a chance node after {game_state.history()}")
        return game_state, moves, codes

    def apply(self, state, action: int, rng: np.random.Generator) -> ChanceTransition:
        """Play decision ``action`` then the chance after it, sampled with ``rng``."""
        afterstate = self.apply_decision(state, action)
        child, codes = self.resolve_chance(afterstate.state, rng)
        mover = afterstate.mover
        reward = self.returns(child)[mover] - self.returns(state)[mover]
        terminal = child.is_terminal()
        turn_changed = not terminal and child.current_player() != mover
        return ChanceTransition(child, float(reward), terminal, turn_changed, tuple(codes))

    def render(self, state) -> str:
        return str(state)

    def action_to_string(self, state, action: int) -> str:
        return state.action_to_string(state.current_player(), int(action))


class ChanceGameEnv:
    """B games of one ``ChanceGame`` in lockstep, chance sampled per game.

    Each game samples its chance with its own generator, seeded by ``reset`` (from ``seeds``,
    else from a generator seeded by ``seed``), so a game depends on its seed and its decisions
    only, never on its slot or the batch size. ``step`` plays each unfinished game's decision and
    the chance after it, up to the next decision or the end; ``reward`` is the change this made to
    the mover's return (``ChanceTransition.reward``). ``last_chance_codes[b]`` holds the codes
    sampled after game b's last decision (after a reset: those that set up its first position;
    empty where the game was already finished), the true chance outcomes for a training record.
    Finished games stay finished (their action is ignored) until ``reset`` is called for them.
    """

    def __init__(self, game: ChanceGame, batch_size: int, seed: int = 0):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.game = game
        self.batch_size = batch_size
        self._seeder = np.random.default_rng(seed)
        self.rngs = [np.random.default_rng(0) for _ in range(batch_size)]
        self.states: list[Any] = [None] * batch_size
        self.moves = np.zeros(batch_size, np.int64)  # decisions played, chance not counted
        self.last_chance_codes: list[list[int]] = [[] for _ in range(batch_size)]
        self._reward = np.zeros(batch_size, np.float32)
        self._truncated = np.zeros(batch_size, np.bool_)
        # Each game's observation and legal mask, rebuilt only when its state changes.
        self._obs = np.zeros((batch_size, *game.obs_shape), np.float32)
        self._legal = np.zeros((batch_size, game.num_actions), np.bool_)
        self.reset()

    def reset(self, seeds=None, indices=None) -> TimeStep:
        """Start new games in ``indices`` (all by default), game ``indices[i]`` sampling its
        chance from ``seeds[i]`` (drawn from the env's own generator when ``None``)."""
        indices = reset_indices(indices, self.batch_size)
        if seeds is None:
            seeds = self._seeder.integers(2**63, size=len(indices))
        seeds = np.asarray(seeds).reshape(-1)
        if len(seeds) != len(indices):
            raise ValueError(f"reset got {len(seeds)} seeds for {len(indices)} games")
        for b, seed in zip(indices, seeds.tolist(), strict=True):
            self.rngs[b] = np.random.default_rng(int(seed))
            self.states[b], self.last_chance_codes[b] = self.game.resolve_chance(
                self.game.new_state(), self.rngs[b]
            )
            self.moves[b] = 0
            self._reward[b] = 0.0
            self._truncated[b] = False
            self._observe(b)
        return self.timestep()

    def step(self, actions) -> TimeStep:
        """Play each unfinished game's decision and the chance after it. Every action is checked
        before any is played, so a refused step leaves all the games as they were."""
        actions = batch_actions(actions, self.batch_size).tolist()
        playing = [b for b in range(self.batch_size) if not self._finished(b)]
        for b in playing:
            action = actions[b]
            if not (0 <= action < self.game.num_actions and self._legal[b, int(action)]):
                raise ValueError(
                    f"game {b}: action {action} is illegal; legal: {self.states[b].legal_actions()}"
                )
        for b in range(self.batch_size):
            if b not in playing:
                self._reward[b] = 0.0
                self.last_chance_codes[b] = []
                continue
            transition = self.game.apply(self.states[b], actions[b], self.rngs[b])
            self.states[b] = transition.state
            self.last_chance_codes[b] = list(transition.chance_codes)
            self._reward[b] = transition.reward
            self.moves[b] += 1
            self._truncated[b] = not transition.terminal and self.moves[b] >= self.game.max_moves
            self._observe(b)
        return self.timestep()

    def play_opening(self, index: int, rng: np.random.Generator, most: int) -> int:
        """Play 0..``most`` (uniform) random decisions in game ``index``, each followed by its
        chance drawn from the game's own generator, stopping short of a decision that would end
        the game or reach ``max_moves``; returns how many were played. Self-play's random
        openings (exploring starts): in a game of chance they reach positions that the agent's
        own play rarely meets, such as a high opponent score, so its value is trained there too."""
        played = 0
        for _ in range(rng.integers(0, most + 1)):
            if self.moves[index] + 1 >= self.game.max_moves:
                break
            state = self.states[index]
            action = int(rng.choice(np.flatnonzero(self.game.legal_mask(state))))
            transition = self.game.apply(state, action, self.rngs[index])
            if transition.terminal:
                break
            self.states[index] = transition.state
            self.last_chance_codes[index] = list(transition.chance_codes)
            self.moves[index] += 1
            played += 1
        self._observe(index)
        return played

    def _finished(self, b: int) -> bool:
        return self.states[b].is_terminal() or bool(self._truncated[b])

    def state_dict(self) -> dict:
        """The games in progress as their action lists, chance outcomes included (OpenSpiel
        states do not pickle), and every generator's state, so a resumed run samples on."""
        return {
            "histories": [s.history() for s in self.states],
            "rngs": [rng.bit_generator.state for rng in self.rngs],
            "seeder": self._seeder.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        histories, rngs = state["histories"], state["rngs"]
        if len(histories) != self.batch_size or len(rngs) != self.batch_size:
            raise ValueError(
                f"checkpoint holds {len(histories)} games in progress and {len(rngs)} "
                f"generators; this run plays {self.batch_size} at once (trainer.num_games)"
            )
        replayed = [self._replay(b, history) for b, history in enumerate(histories)]
        for b, (game_state, moves, codes) in enumerate(replayed):
            self.states[b], self.moves[b], self.last_chance_codes[b] = game_state, moves, codes
            self.rngs[b] = np.random.default_rng(0)
            self.rngs[b].bit_generator.state = rngs[b]
            self._reward[b] = 0.0
            self._truncated[b] = not game_state.is_terminal() and moves >= self.game.max_moves
            self._observe(b)
        self._seeder.bit_generator.state = state["seeder"]

    def _replay(self, b: int, history) -> tuple[Any, int, list[int]]:
        try:
            return self.game.replay(history)
        except ValueError as error:
            raise ValueError(
                f"checkpoint's game {b} in progress {error}; the checkpoint is corrupt or from "
                "another game"
            ) from None

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
