"""Self-play: B episodes of a batched environment in lockstep, one batched search per step.

The one actor of every algorithm. The environment is any ``games`` protocol env (``reset(seeds,
indices)``, ``step(actions)`` returning ``TimeStep``; a finished slot stays finished until it is
reset): OpenSpiel board games through ``BoardGameEnv``, CartPole, Atari. The model is the search's
model: the true game (``GameModel``, AlphaZero; it plans from the env's ``states``) or a learned
one (``LatentModel``). Each step searches all B roots at once, plays, records, and hands finished
episodes out as ``Episode`` records; their slots start a new episode at once.

Action choice: Gumbel search plays the action its sequential halving chose; PUCT samples from the
visit counts at the configured temperature for the first ``temperature_moves`` moves of a game
(MuZero's schedule lowers the temperature as training goes on) and plays the most visited action
after that.

Board games (and, for openings, games of chance):

- ``random_opening_moves = N``: each game starts from 0..N uniformly random legal moves (seeded by
  the game's id, never one that ends it; a game of chance draws its chance after each as usual),
  played at the reset without search and neither recorded nor counted as self-play moves:
  openings the agent would not choose still get targets from its own search, and the game's move
  number (temperature, search keys) starts after them.
- ``resign_threshold``: AlphaZero's resignation (off at -1). A player whose search values its
  position below the threshold gives up and the previous move wins, except in every
  ``no_resign_every``-th game, which is played out so that ``resigned_wrongly`` counts how often
  resigning would have been a mistake.
- ``tree_value_min_visits = m`` (> 0): after each search, every decision node of the tree is a
  position, valued by the tree's expectimax value where it has at least ``m`` visits and every
  legal move tried (`mbrl.selfplay.tree_values`); ``take_tree_nodes`` hands them out, and
  ``search_positions`` searches from given positions (the learner's re-search). Only models
  that search the true game can turn a node back into a position.
- A resumed run continues the games in progress exactly (the env's move lists and the partial
  records are in ``state_dict``). Other environments' emulator states are not checkpointed: their
  episodes in progress restart.

Observations are recorded as their newest frame only (the replay rebuilds stacks).
"""

from __future__ import annotations

import time

import numpy as np
import torch

import search
from games import TimeStep
from mbrl.replay.episodes import Episode
from mbrl.selfplay.planner import opening_rng, played_actions, root_keys
from mbrl.selfplay.tree_values import TreeNodes, tree_node_values
from search import SearchSettings

_RECORDED = (
    "frames",
    "actions",
    "rewards",
    "to_play",
    "policy",
    "root_value",
    "move_value",
    "legal",
    "turns",
)


def played_move_values(output: search.SearchOutput, actions: np.ndarray) -> np.ndarray:
    """``[B]`` the search's Q of each root's played move, from the mover's perspective; the root
    value where that move was never visited. Unlike the root value it does not average in the
    moves sequential halving tried and dropped (a Gumbel root with a win in one values it ~0.3)."""
    rows = np.arange(len(actions))
    visited = output.visit_counts[rows, actions] > 0
    return np.where(visited, output.qvalues[rows, actions], output.root_value).astype(np.float32)


class SelfPlayActor:
    def __init__(
        self,
        env,
        model,
        settings: SearchSettings,
        *,
        seed: int,
        frame_channels: int | None = None,
        two_player: bool = False,
        temperature_moves: int = 10**9,
        segment_length: int = 0,
        segment_overlap: int = 0,
        frame_stack: int = 1,
        random_opening_moves: int = 0,
        resign_threshold: float = -1.0,
        no_resign_every: int = 10,
        bootstrap_truncation: bool = True,
        tree_value_min_visits: int = 0,
    ):
        if random_opening_moves and not hasattr(env, "play_opening"):
            raise ValueError(
                f"random_opening_moves={random_opening_moves} needs a game whose moves can be "
                f"played at a reset (board games, games of chance); {type(env).__name__} has none"
            )
        if resign_threshold > -1.0 and not two_player:
            raise ValueError(
                f"resign_threshold={resign_threshold} needs a two-player game (-1 = off)"
            )
        if tree_value_min_visits and not hasattr(model, "node_positions"):
            raise ValueError(
                f"tree_value_min_visits={tree_value_min_visits} needs a model that searches the "
                f"true game (its nodes' observations); {type(model).__name__} has none"
            )
        self.env, self.model, self.settings = env, model, settings
        self.num_envs = env.batch_size
        self.seed = seed
        self.frame_channels = frame_channels  # None: keep the whole observation
        self.two_player = two_player
        self.temperature_moves = temperature_moves
        self.temperature = 1.0
        self.random_opening_moves = random_opening_moves
        # A game cut off by a time or move limit: its value after the last move from the network
        # (learned models), or a draw (AlphaZero: the game's outcome is the value target).
        self.bootstrap_truncation = bootstrap_truncation
        self.resign_threshold = resign_threshold
        self.no_resign_every = max(1, no_resign_every)
        self.resignations = 0
        self.resigned_wrongly = 0
        self._would_resign: dict[int, int] = {}  # slot -> player, in played-out games
        self.tree_value_min_visits = tree_value_min_visits
        self.tree_nodes: list[TreeNodes] = []  # the searches' since take_tree_nodes
        # Long episodes (Atari: up to 27,000 steps) go to replay in segments of
        # `segment_length` positions, each followed by `segment_overlap` (>= TD steps + K)
        # positions that only feed its targets, and preceded by frame_stack - 1 positions that
        # only complete its first frame stacks (EfficientZero stores 400-step blocks).
        if segment_length and segment_length < frame_stack:
            raise ValueError(
                f"segment_length must be 0 (whole episodes) or >= frame_stack={frame_stack}, "
                f"got {segment_length}"
            )
        self.segment_length = segment_length
        self.segment_overlap = segment_overlap
        self.stack_context = frame_stack - 1
        self.context = np.zeros(self.num_envs, np.int64)  # leading context positions per record
        self.running_return = np.zeros(self.num_envs, np.float64)  # player 0's, whole episode
        self.next_episode_id = 0
        self.episode_ids = np.zeros(self.num_envs, np.int64)
        self.moves = np.zeros(self.num_envs, np.int64)  # move number in each game
        self.records: list[dict[str, list]] = [{} for _ in range(self.num_envs)]
        self.moves_played = 0
        self.episodes_finished = 0
        self.simulations = 0
        self.search_seconds = 0.0
        self.env_seconds = 0.0
        self.returns: list[float] = []  # undiscounted returns of finished episodes (player 0)
        self.timestep = self._reset(np.arange(self.num_envs), seeded=True)

    def _reset(self, slots: np.ndarray, seeded: bool = False) -> TimeStep:
        """Start new episodes in ``slots``. Only the first reset (and a resume) seeds the
        environments: later episodes continue each slot's own seeded stream, and an Atari
        slot after a lost life must continue its game rather than be re-seeded."""
        ids = self.next_episode_id + np.arange(len(slots))
        self.next_episode_id += len(slots)
        for slot, episode_id in zip(slots.tolist(), ids.tolist(), strict=True):
            self.episode_ids[slot] = episode_id
            self.moves[slot] = 0
            self.records[slot] = {name: [] for name in _RECORDED}
            self.context[slot] = 0
            self.running_return[slot] = 0.0
        seeds = [(self.seed * 1_000_003 + int(i)) % 2**31 for i in ids] if seeded else None
        timestep = self.env.reset(seeds=seeds, indices=slots)
        if not self.random_opening_moves or not len(slots):
            return timestep
        for slot, episode_id in zip(slots.tolist(), ids.tolist(), strict=True):
            rng = opening_rng(self.seed, episode_id)  # the game's, whatever its slot
            self.moves[slot] = self.env.play_opening(slot, rng, self.random_opening_moves)
        return self.env.timestep()

    def step(self) -> list[Episode]:
        """One move in every episode (or a resignation); returns the episodes that finished."""
        ts = self.timestep
        keys = root_keys(self.seed, self.episode_ids, self.moves)
        start = time.perf_counter()
        output = search.run(
            self.model.search_root(getattr(self.env, "states", None), ts.obs),
            self.model.recurrent_fn,
            self.settings,
            legal_mask=ts.legal,
            keys=keys,
            temperature=self.temperature,
            value_prefix_horizon=self.model.value_prefix_horizon,
        )
        self.search_seconds += time.perf_counter() - start
        self.simulations += self.num_envs * self.settings.num_simulations
        if self.tree_value_min_visits:
            self.tree_nodes.append(self._tree_nodes(output, ts.legal.shape[1]))
        actions = played_actions(output, self.settings, self.moves < self.temperature_moves)
        move_values = played_move_values(output, actions)
        resigned = self._resigning(ts.to_play, output.root_value)
        start = time.perf_counter()
        next_ts = self.env.step(actions)  # a resigning game's move is dropped with its slot
        self.env_seconds += time.perf_counter() - start
        for slot in range(self.num_envs):
            if resigned[slot]:
                self._resign(slot, int(ts.to_play[slot]))
                continue
            reward = float(next_ts.reward[slot])
            self.running_return[slot] += reward if ts.to_play[slot] == 0 else -reward
            record = self.records[slot]
            obs = ts.obs[slot]
            record["frames"].append(
                obs if self.frame_channels is None else obs[-self.frame_channels :]
            )
            record["actions"].append(actions[slot])
            record["rewards"].append(next_ts.reward[slot])
            record["to_play"].append(ts.to_play[slot])
            record["policy"].append(output.action_weights[slot])
            record["root_value"].append(output.root_value[slot])
            record["move_value"].append(move_values[slot])
            record["legal"].append(ts.legal[slot])
            if next_ts.done[slot]:
                record["turns"].append(self.two_player)
            else:
                record["turns"].append(bool(next_ts.to_play[slot] != ts.to_play[slot]))
        self.moves += 1
        self.moves_played += self.num_envs - int(resigned.sum())
        ended = next_ts.done | resigned
        finished = self._segments(ended) + self._finish(ended, resigned, next_ts)
        done = np.flatnonzero(ended)
        self.timestep = self._reset(done) if len(done) else next_ts
        return finished

    # -- value targets from the search trees -------------------------------------------------------

    def _tree_nodes(self, output: search.SearchOutput, num_actions: int) -> TreeNodes:
        embeddings = output.embeddings
        is_decision = getattr(embeddings, "is_decision_node", None)
        states = embeddings if is_decision is None else embeddings.state
        roots, nodes, values = tree_node_values(
            output.tree, is_decision, num_actions, self.tree_value_min_visits
        )
        obs, live, kept = self.model.node_positions(states, roots, nodes)
        return TreeNodes(obs, live, values[kept])

    def take_tree_nodes(self) -> TreeNodes | None:
        """The positions of the self-play searches since the last call."""
        if not self.tree_nodes:
            return None
        chunks, self.tree_nodes = self.tree_nodes, []
        return TreeNodes(
            np.concatenate([chunk.obs for chunk in chunks]),
            [state for chunk in chunks for state in chunk.states],
            np.concatenate([chunk.value for chunk in chunks]),
        )

    def search_positions(self, states: list, keys: int) -> TreeNodes:
        """Search from the game ``states`` (root noise from ``keys``, nothing played) and return
        the positions of the trees: the learner's re-search of rare positions."""
        obs, legal = self.model.observe(states)
        output = search.run(
            self.model.search_root(states, obs),
            self.model.recurrent_fn,
            self.settings,
            legal_mask=legal,
            keys=keys,
        )
        return self._tree_nodes(output, legal.shape[1])

    # -- resignation (board games) -------------------------------------------------------------

    def _resigning(self, to_play: np.ndarray, root_value: np.ndarray) -> np.ndarray:
        """``[B]`` bool: the player to move gives up."""
        resigned = np.zeros(self.num_envs, np.bool_)
        if self.resign_threshold <= -1.0:
            return resigned
        for slot in np.flatnonzero(root_value < self.resign_threshold).tolist():
            if not self.records[slot]["actions"]:  # keep at least one position per game
                continue
            if self.episode_ids[slot] % self.no_resign_every == 0:  # played out to check
                self._would_resign.setdefault(slot, int(to_play[slot]))
                continue
            resigned[slot] = True
        self.resignations += int(resigned.sum())
        return resigned

    def _resign(self, slot: int, loser: int) -> None:
        """The previous move (the last one recorded) wins the game."""
        record = self.records[slot]
        reward = 1.0 if record["to_play"][-1] != loser else -1.0  # to the player who made it
        record["rewards"][-1] = np.float32(reward)
        record["turns"][-1] = self.two_player
        self.running_return[slot] += reward if record["to_play"][-1] == 0 else -reward

    def _count_wrong_resignation(self, slot: int) -> None:
        player = self._would_resign.pop(slot, None)
        if player is not None:
            player_return = self.running_return[slot] * (1 if player == 0 else -1)
            self.resigned_wrongly += int(player_return >= 0)

    # -- handing out episodes -------------------------------------------------------------------

    def _episode(self, slot: int, end: int, *, terminated: bool, final_value: float, sampleable):
        record = self.records[slot]
        return Episode(
            obs=np.stack(record["frames"][:end]),
            actions=np.asarray(record["actions"][:end], np.int64),
            rewards=np.asarray(record["rewards"][:end], np.float32),
            to_play=np.asarray(record["to_play"][:end], np.int64),
            policy=np.stack(record["policy"][:end]).astype(np.float32),
            root_value=np.asarray(record["root_value"][:end], np.float32),
            move_value=np.asarray(record["move_value"][:end], np.float32),
            legal=np.stack(record["legal"][:end]),
            turn_changes=np.asarray(record["turns"][:end], np.bool_),
            terminated=terminated,
            final_value=final_value,
            context=int(self.context[slot]),
            sampleable=sampleable,
        )

    def _segments(self, done: np.ndarray) -> list[Episode]:
        """Segments of episodes still running that have grown long enough."""
        if not self.segment_length:
            return []
        segments = []
        for slot in np.flatnonzero(~done).tolist():
            context = int(self.context[slot])
            end = context + self.segment_length + self.segment_overlap
            if len(self.records[slot]["actions"]) < end:
                continue
            segments.append(
                self._episode(
                    slot, end, terminated=False, final_value=0.0, sampleable=self.segment_length
                )
            )
            keep_from = context + self.segment_length - self.stack_context
            self.records[slot] = {k: v[keep_from:] for k, v in self.records[slot].items()}
            self.context[slot] = self.stack_context
        return segments

    def _finish(self, ended: np.ndarray, resigned: np.ndarray, ts: TimeStep) -> list[Episode]:
        done = np.flatnonzero(ended)
        if not len(done):
            return []
        terminated = ts.terminated | resigned
        truncated = done[~terminated[done]]
        final_values = np.zeros(self.num_envs, np.float32)
        if len(truncated) and self.bootstrap_truncation:  # from the network's value
            final_values[truncated] = self.model.values(ts.obs[truncated])
        episodes = []
        for slot in done.tolist():
            self.returns.append(float(self.running_return[slot]))
            self._count_wrong_resignation(slot)
            episodes.append(
                self._episode(
                    slot,
                    len(self.records[slot]["actions"]),
                    terminated=bool(terminated[slot]),
                    final_value=float(final_values[slot]),
                    sampleable=None,
                )
            )
        self.episodes_finished += len(episodes)
        return episodes

    # -- counters ---------------------------------------------------------------------------------

    def counters(self) -> dict[str, float]:
        """Totals of the whole run (they resume with ``state_dict``)."""
        return {
            "moves": float(self.moves_played),
            "games": float(self.episodes_finished),
            "simulations": float(self.simulations),
            "resignations": float(self.resignations),
            "resigned_wrongly": float(self.resigned_wrongly),
        }

    def timings(self) -> dict[str, float]:
        """Where this process's self-play time went (not checkpointed)."""
        return {
            "search_seconds": self.search_seconds,
            "env_seconds": self.env_seconds,
            "network_calls": float(self.model.network_calls),
            "network_seconds": self.model.network_seconds,
        }

    # -- checkpointing ----------------------------------------------------------------------------

    def state_dict(self, tensors: bool = True) -> dict:
        """The counters and, for board games, the games in progress; arrays as tensors (a
        checkpoint's, which loads with ``weights_only``) or, ``tensors=False``, as numpy
        arrays (Ray's transport pickles those several times faster)."""
        array = torch.from_numpy if tensors else np.asarray
        state = {
            "next_episode_id": self.next_episode_id,
            "moves_played": self.moves_played,
            "episodes_finished": self.episodes_finished,
            "simulations": self.simulations,
            "resignations": self.resignations,
            "resigned_wrongly": self.resigned_wrongly,
        }
        if hasattr(self.env, "state_dict"):  # board games: the games in progress, exactly
            state["in_progress"] = {
                "env": self.env.state_dict(),
                "records": [
                    {k: array(np.asarray(v)) for k, v in record.items() if v}
                    for record in self.records
                ],
                **{
                    name: array(getattr(self, name).copy())
                    for name in ("episode_ids", "moves", "context", "running_return")
                },
                "would_resign": {str(k): v for k, v in self._would_resign.items()},
            }
        return state

    def load_state_dict(self, state: dict) -> None:
        self.next_episode_id = int(state["next_episode_id"])
        self.moves_played = int(state["moves_played"])
        self.episodes_finished = int(state["episodes_finished"])
        self.simulations = int(state["simulations"])
        self.resignations = int(state.get("resignations", 0))
        self.resigned_wrongly = int(state.get("resigned_wrongly", 0))
        progress = state.get("in_progress")
        if progress is None or not hasattr(self.env, "load_state_dict"):
            self.timestep = self._reset(np.arange(self.num_envs), seeded=True)  # restart them
            return
        self.env.load_state_dict(progress["env"])
        for name in ("episode_ids", "moves", "context", "running_return"):
            setattr(self, name, progress[name].numpy().copy())
        self.records = [
            {name: list(record[name].numpy()) if name in record else [] for name in _RECORDED}
            for record in progress["records"]
        ]
        self._would_resign = {int(k): int(v) for k, v in progress["would_resign"].items()}
        self.timestep = self.env.timestep()
