"""Self-play: B games in lockstep, one batched search per move.

Each call to ``step`` makes one move in every game (B environment steps). A game that ends is
handed out as a ``Trajectory`` and its slot starts a new game at once, so every step is a full
batch. Move selection follows AlphaZero: sample from the search's policy for the first
``temperature_moves`` moves of a game, then play the most visited action; Gumbel search plays
the action its sequential halving chose. Resignation is off unless a threshold is set.

With ``random_opening_moves = N`` each game starts from 0..N uniformly random legal moves
(never one that ends the game), applied to the simulator and not recorded: openings the agent
would not choose still get targets from its own search. The actor's state (games in progress as
move lists, partial trajectories, counters) round-trips through ``state_dict`` so a resumed run
continues the same games.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from games import BoardGame
from mbrl.replay.targets import Trajectory
from mbrl.selfplay.game_model import GameModel
from mbrl.selfplay.planner import opening_rng, plan, played_actions, root_keys
from search import SearchSettings

_FIELDS = ("obs", "legal", "policy", "root_value", "move_value", "to_play", "actions")


def played_move_values(output, actions: np.ndarray) -> np.ndarray:
    """``[B]`` the search's Q of each root's played move, from the mover's perspective; the root
    value where that move was never visited. Unlike the root value it does not average in the
    moves sequential halving tried and dropped (a Gumbel root with a win in one values it ~0.3)."""
    rows = np.arange(len(actions))
    visited = output.visit_counts[rows, actions] > 0
    return np.where(visited, output.qvalues[rows, actions], output.root_value).astype(np.float32)


class SelfPlayActor:
    def __init__(
        self,
        game: BoardGame,
        model: GameModel,
        settings: SearchSettings,
        *,
        num_games: int,
        temperature_moves: int,
        seed: int,
        resign_threshold: float = -1.0,
        no_resign_every: int = 10,
        random_opening_moves: int = 0,
    ):
        if num_games < 1:
            raise ValueError(f"actor.num_games must be >= 1, got {num_games}")
        self.game, self.model, self.settings = game, model, settings
        self.num_games = num_games
        self.temperature_moves = temperature_moves
        self.random_opening_moves = random_opening_moves
        self.seed = seed
        # AlphaZero's resignation (off at -1): a player whose search values its position below
        # the threshold gives up, except in every `no_resign_every`-th game, which is played out
        # so that `resigned_wrongly` counts how often resigning would have been a mistake.
        self.resign_threshold = resign_threshold
        self.no_resign_every = max(1, no_resign_every)
        self.resignations = 0
        self.resigned_wrongly = 0
        self._would_resign: dict[int, int] = {}  # slot -> player, in played-out games
        self.next_game_id = 0
        self.game_ids = np.zeros(num_games, np.int64)
        self.states: list = [None] * num_games
        self.history: list[list[int]] = [[] for _ in range(num_games)]
        self.partial: list[dict[str, list]] = [{} for _ in range(num_games)]
        for slot in range(num_games):
            self._new_game(slot)
        self.moves_played = 0
        self.games_finished = 0
        self.search_seconds = 0.0  # wall time inside the search (network included)
        self.simulations = 0

    def _new_game(self, slot: int) -> None:
        self.game_ids[slot] = self.next_game_id
        self.next_game_id += 1
        self.states[slot], self.history[slot] = self._opening(int(self.game_ids[slot]))
        self.partial[slot] = {name: [] for name in _FIELDS}

    def _opening(self, game_id: int) -> tuple[object, list[int]]:
        """The start of game ``game_id``: its random opening (seeded by the game's id, so it
        does not depend on the slot), stopped short of any move that would end the game."""
        state, history = self.game.new_state(), []
        if not self.random_opening_moves:
            return state, history
        rng = opening_rng(self.seed, game_id)
        for _ in range(rng.integers(0, self.random_opening_moves + 1)):
            action = int(rng.choice(np.flatnonzero(self.game.legal_mask(state))))
            transition = self.game.apply(state, action)
            if transition.terminal:
                break
            state = transition.state
            history.append(action)
        return state, history

    def step(self) -> list[Trajectory]:
        """One move in every game (or a resignation); returns the games that finished."""
        moves = np.array([len(h) for h in self.history])
        keys = root_keys(self.seed, self.game_ids, moves)
        start = time.perf_counter()
        obs, legal = self.model.root_inputs(self.states)  # searched from, then stored
        output = plan(self.model, self.states, self.settings, keys=keys, inputs=(obs, legal))
        self.search_seconds += time.perf_counter() - start
        self.simulations += self.num_games * self.settings.num_simulations
        actions = played_actions(output, self.settings, moves < self.temperature_moves)
        move_values = played_move_values(output, actions)
        finished = []
        made = 0
        for slot, action in enumerate(actions.tolist()):
            state = self.states[slot]
            if self._resigns(slot, state, output.root_value[slot]):
                finished.append(
                    self._trajectory(slot, truncated=False, loser=state.current_player())
                )
                self._new_game(slot)
                continue
            record = self.partial[slot]
            record["obs"].append(obs[slot])
            record["legal"].append(legal[slot])
            record["policy"].append(output.action_weights[slot])
            record["root_value"].append(output.root_value[slot])
            record["move_value"].append(move_values[slot])
            record["to_play"].append(state.current_player())
            record["actions"].append(action)
            transition = self.game.apply(state, action)
            made += 1
            self.states[slot] = transition.state
            self.history[slot].append(action)
            truncated = not transition.terminal and len(self.history[slot]) >= self.game.max_moves
            if transition.terminal or truncated:
                finished.append(self._trajectory(slot, truncated))
                self._count_wrong_resignation(slot, transition.state, truncated)
                self._new_game(slot)
        self.moves_played += made
        self.games_finished += len(finished)
        return finished

    def _resigns(self, slot: int, state, root_value: float) -> bool:
        if self.resign_threshold <= -1.0 or root_value >= self.resign_threshold:
            return False
        if not self.partial[slot]["actions"]:  # keep at least one position per game
            return False
        if self.game_ids[slot] % self.no_resign_every == 0:  # played out to check
            self._would_resign.setdefault(slot, state.current_player())
            return False
        self.resignations += 1
        return True

    def _count_wrong_resignation(self, slot: int, state, truncated: bool) -> None:
        player = self._would_resign.pop(slot, None)
        if player is not None and (truncated or state.returns()[player] >= 0):
            self.resigned_wrongly += 1

    def _trajectory(self, slot: int, truncated: bool, loser: int | None = None) -> Trajectory:
        record = self.partial[slot]
        state = self.states[slot]
        if loser is not None:  # resigned
            returns = np.ones(2, np.float32)
            returns[loser] = -1.0
        elif truncated:
            returns = np.zeros(2, np.float32)
        else:
            returns = np.asarray(state.returns(), np.float32)
        return Trajectory(
            obs=np.stack(record["obs"]),
            legal=np.stack(record["legal"]),
            policy=np.stack(record["policy"]).astype(np.float32),
            root_value=np.asarray(record["root_value"], np.float32),
            move_value=np.asarray(record["move_value"], np.float32),
            to_play=np.asarray(record["to_play"], np.int64),
            actions=np.asarray(record["actions"], np.int64),
            returns=returns,
            truncated=truncated,
        )

    def state_dict(self) -> dict:
        partial = [
            {
                name: torch.from_numpy(np.asarray(values)) if values else torch.empty(0)
                for name, values in record.items()
            }
            for record in self.partial
        ]
        return {
            "next_game_id": self.next_game_id,
            "game_ids": torch.from_numpy(self.game_ids.copy()),
            "history": [list(h) for h in self.history],
            "partial": partial,
            "moves_played": self.moves_played,
            "games_finished": self.games_finished,
            "simulations": self.simulations,
            "resignations": self.resignations,
            "resigned_wrongly": self.resigned_wrongly,
            "would_resign": {str(k): v for k, v in self._would_resign.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        if len(state["history"]) != self.num_games:
            raise ValueError(
                f"checkpoint's actor played {len(state['history'])} games at once; this run "
                f"plays {self.num_games} (actor.num_games)"
            )
        self.next_game_id = int(state["next_game_id"])
        self.game_ids = state["game_ids"].numpy().copy()
        for slot, history in enumerate(state["history"]):
            game_state = self.game.new_state()
            for action in history:
                game_state.apply_action(int(action))
            self.states[slot] = game_state
            self.history[slot] = [int(a) for a in history]
            self.partial[slot] = {
                name: list(values.numpy()) if len(history) else []
                for name, values in state["partial"][slot].items()
            }
            # Checkpoints written before `move_value` was recorded: the root value stands in.
            self.partial[slot].setdefault("move_value", list(self.partial[slot]["root_value"]))
        self.moves_played = int(state["moves_played"])
        self.games_finished = int(state["games_finished"])
        self.simulations = int(state["simulations"])
        self.resignations = int(state.get("resignations", 0))
        self.resigned_wrongly = int(state.get("resigned_wrongly", 0))
        self._would_resign = {int(k): int(v) for k, v in state.get("would_resign", {}).items()}
