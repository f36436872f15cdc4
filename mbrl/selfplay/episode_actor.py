"""Self-play with a learned model: B episodes of a batched environment, one search per step.

The environment is any ``games`` protocol env (``reset(seeds, indices)``, ``step(actions)``
returning ``TimeStep``; a finished slot stays finished until it is reset): CartPole, Atari, or
OpenSpiel board games through ``BoardGameEnv``. Each step searches all B roots with the learned
model at once, plays, records, and hands finished episodes out as ``Episode`` records; their slots
start a new episode at once.

Action choice: Gumbel search plays the action its sequential halving chose; PUCT samples from the
visit counts at the configured temperature for the first ``temperature_moves`` moves of an
episode (MuZero's schedule lowers the temperature as training goes on) and plays the most
visited action after that.

With ``random_opening_moves = N`` each episode starts with 0..N uniformly random legal actions
(seeded by the episode's id) that are played in the environment (and count as its steps) but not
recorded: the replay's first position is the one after them, so every target still comes from the
agent's own play. An episode that ends during its opening is dropped.

Observations are recorded as their newest frame only (the replay rebuilds stacks). A resumed run
keeps its finished episodes and counters; episodes in progress at the checkpoint are restarted
(environment emulator states are not checkpointed).
"""

from __future__ import annotations

import time

import numpy as np

import search
from games import TimeStep
from mbrl.replay.episodes import Episode
from mbrl.selfplay.latent_model import LatentModel
from mbrl.selfplay.planner import opening_rng, played_actions, root_keys
from search import SearchSettings

_RECORDED = ("frames", "actions", "rewards", "to_play", "policy", "root_value", "legal", "turns")


class EpisodeActor:
    def __init__(
        self,
        env,
        model: LatentModel,
        settings: SearchSettings,
        *,
        seed: int,
        frame_channels: int | None = None,
        two_player: bool = False,
        temperature_moves: int = 10**9,
        value_prefix_horizon: int = 0,
        segment_length: int = 0,
        segment_overlap: int = 0,
        frame_stack: int = 1,
        random_opening_moves: int = 0,
    ):
        if random_opening_moves and frame_stack > 1:
            raise ValueError(
                f"random_opening_moves={random_opening_moves} needs frame_stack 1, got "
                f"{frame_stack}: the replay rebuilds a stack from recorded frames only, and the "
                "opening's frames are not recorded"
            )
        self.env, self.model, self.settings = env, model, settings
        self.num_envs = env.batch_size
        self.seed = seed
        self.frame_channels = frame_channels  # None: keep the whole observation
        self.two_player = two_player
        self.temperature_moves = temperature_moves
        self.temperature = 1.0
        self.random_opening_moves = random_opening_moves
        self.opening_left = np.zeros(self.num_envs, np.int64)  # unrecorded moves still to play
        self.opening_rngs: list[np.random.Generator | None] = [None] * self.num_envs
        self.value_prefix_horizon = value_prefix_horizon or None
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
        self.moves = np.zeros(self.num_envs, np.int64)
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
            if self.random_opening_moves:
                rng = opening_rng(self.seed, episode_id)
                self.opening_rngs[slot] = rng
                self.opening_left[slot] = rng.integers(0, self.random_opening_moves + 1)
        seeds = [(self.seed * 1_000_003 + int(i)) % 2**31 for i in ids] if seeded else None
        return self.env.reset(seeds=seeds, indices=slots)

    def step(self) -> list[Episode]:
        """One step in every episode; returns the episodes that finished."""
        ts = self.timestep
        keys = root_keys(self.seed, self.episode_ids, self.moves)
        start = time.perf_counter()
        root = self.model.root(ts.obs)
        output = search.run(
            root,
            self.model.recurrent_fn,
            self.settings,
            legal_mask=ts.legal,
            keys=keys,
            temperature=self.temperature,
            value_prefix_horizon=self.value_prefix_horizon,
        )
        self.search_seconds += time.perf_counter() - start
        self.simulations += self.num_envs * self.settings.num_simulations
        actions = played_actions(output, self.settings, self.moves < self.temperature_moves)
        opening = self.opening_left > 0
        for slot in np.flatnonzero(opening).tolist():
            actions[slot] = self.opening_rngs[slot].choice(np.flatnonzero(ts.legal[slot]))
        start = time.perf_counter()
        next_ts = self.env.step(actions)
        self.env_seconds += time.perf_counter() - start
        for slot in range(self.num_envs):
            reward = float(next_ts.reward[slot])
            self.running_return[slot] += reward if ts.to_play[slot] == 0 else -reward
            if opening[slot]:
                self.opening_left[slot] -= 1
                continue
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
            record["legal"].append(ts.legal[slot])
            if next_ts.done[slot]:
                record["turns"].append(self.two_player)
            else:
                record["turns"].append(bool(next_ts.to_play[slot] != ts.to_play[slot]))
        self.moves += 1
        self.moves_played += self.num_envs
        done = np.flatnonzero(next_ts.done)
        finished = self._segments(next_ts.done) + self._finish(done, next_ts)
        self.timestep = self._reset(done) if len(done) else next_ts
        return finished

    def _episode(self, slot: int, end: int, *, terminated: bool, final_value: float, sampleable):
        record = self.records[slot]
        return Episode(
            obs=np.stack(record["frames"][:end]),
            actions=np.asarray(record["actions"][:end], np.int64),
            rewards=np.asarray(record["rewards"][:end], np.float32),
            to_play=np.asarray(record["to_play"][:end], np.int64),
            policy=np.stack(record["policy"][:end]).astype(np.float32),
            root_value=np.asarray(record["root_value"][:end], np.float32),
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

    def _finish(self, done: np.ndarray, ts: TimeStep) -> list[Episode]:
        if not len(done):
            return []
        truncated = done[~ts.terminated[done]]
        final_values = np.zeros(self.num_envs, np.float32)
        if len(truncated):  # bootstrap past the time limit from the network's value
            final_values[truncated] = self.model.values(ts.obs[truncated])
        episodes = []
        for slot in done.tolist():
            self.returns.append(float(self.running_return[slot]))
            if not self.records[slot]["actions"]:
                continue  # ended during its random opening: nothing to learn from
            episodes.append(
                self._episode(
                    slot,
                    len(self.records[slot]["actions"]),
                    terminated=bool(ts.terminated[slot]),
                    final_value=float(final_values[slot]),
                    sampleable=None,
                )
            )
        self.episodes_finished += len(episodes)
        return episodes

    def state_dict(self) -> dict:
        return {
            "next_episode_id": self.next_episode_id,
            "moves_played": self.moves_played,
            "episodes_finished": self.episodes_finished,
            "simulations": self.simulations,
        }

    def load_state_dict(self, state: dict) -> None:
        self.next_episode_id = int(state["next_episode_id"])
        self.moves_played = int(state["moves_played"])
        self.episodes_finished = int(state["episodes_finished"])
        self.simulations = int(state["simulations"])
        self.timestep = self._reset(np.arange(self.num_envs), seeded=True)  # restart them
