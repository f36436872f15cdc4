"""Episode replay for learned-model agents (MuZero, EfficientZero, Gumbel MuZero).

Finished episodes are stored position by position in a ring of preallocated arrays. Observations
are kept compactly: only each position's newest frame (``obs[-C:]`` of a frame-stacked
``[stack * C, H, W]`` observation, uint8 for Atari), and stacks are rebuilt on sampling from the
episode's earlier frames (repeating its first frame before the start, as the environment does at
a reset).

A sample at position ``t`` is MuZero's K-step unroll target:

- ``actions[k] = a[t+k]`` for ``k < K``; past the episode's end a random action (MuZero: the
  model must learn that every action from an absorbing state keeps it absorbing);
- ``reward[k] = r[t+k-1]`` for ``k >= 1``, the reward of the transition into unroll step ``k``;
- ``value[k] = z[t+k]``, the n-step return ``sum_i D_i r[u+i] + D_n v[u+n]`` with
  ``D_i = prod_{j<i} d[u+j]`` and per-step discount ``d = gamma`` (single agent) or ``-gamma``
  when the turn passes to the opponent (zero-sum games: every value is the mover's);
- ``policy[k]`` = the search's policy at ``t+k``.

Past the end of a terminated episode the state is absorbing: value and reward targets 0 and
no policy target. Past the end of a truncated episode nothing is known, so value and reward are
masked too; a bootstrap that crosses the truncation uses the value the actor recorded for the
final observation. The bootstrap value ``v[u+n]`` is the stored search value unless the caller
recomputes it with a target network (``Unroll.bootstrap_index`` says where), as EfficientZero
does on every sample.

Priorities are per position (proportional, ``p^alpha`` with importance weights ``beta``).
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import numpy as np
import torch

from mbrl.config import AlgoConfig


class Episode(NamedTuple):
    """One finished episode of ``T`` moves, as the actor recorded it."""

    obs: np.ndarray  # [T, *obs_shape] the observation each move was searched from
    actions: np.ndarray  # [T] int64
    rewards: np.ndarray  # [T] float32, reward of move t to the player who made it
    to_play: np.ndarray  # [T] int64
    policy: np.ndarray  # [T, A] float32, the search's policy target
    root_value: np.ndarray  # [T] float32, the search's value of each position
    move_value: np.ndarray  # [T] float32, the search's Q of the move played (mover's view)
    legal: np.ndarray  # [T, A] bool
    turn_changes: np.ndarray  # [T] bool, the player to move changes after move t
    terminated: bool  # False: cut off (time limit), so the end is not absorbing
    final_value: float  # network value of the observation after the last move (truncation)
    # A segment of a long episode (see EpisodeActor.segment_length): its first ``context``
    # positions only complete frame stacks, the next ``sampleable`` may start an unroll, and
    # the rest only feed the targets of those (the next segment stores them again).
    context: int = 0
    sampleable: int | None = None  # None: every position after the context


class NStepTargets(NamedTuple):
    """n-step returns from each unroll position, and what reanalysis needs to refresh them."""

    value: np.ndarray  # [S, K+1] float32 targets with the stored bootstrap values
    bootstrap_index: np.ndarray  # [S, K+1] absolute position bootstrapped from, -1 if none
    bootstrap_discount: np.ndarray  # [S, K+1] D_n multiplying that bootstrap value
    bootstrap_value: np.ndarray  # [S, K+1] the stored value used (0 where none)


class Unroll(NamedTuple):
    """A batch of S unroll targets (numpy; K = unroll steps)."""

    indices: np.ndarray  # [S] int64 absolute positions (for priorities)
    weights: np.ndarray  # [S] float32 importance weights
    obs: np.ndarray  # [S, *obs_shape] at t
    future_obs: np.ndarray | None  # [S, K, *obs_shape] at t+1..t+K (consistency), or None
    legal: np.ndarray  # [S, A] at t
    actions: np.ndarray  # [S, K] int64
    policy: np.ndarray  # [S, K+1, A]
    reward: np.ndarray  # [S, K+1] (index 0 unused, 0)
    value: np.ndarray  # [S, K+1] n-step targets with the stored bootstrap values
    policy_mask: np.ndarray  # [S, K+1] float32, 1 inside the episode
    value_mask: np.ndarray  # [S, K+1] float32, 1 inside or absorbing after a termination
    reward_mask: np.ndarray  # [S, K+1] float32, 1 where the transition into step k is known
    bootstrap_index: np.ndarray  # [S, K+1] absolute position bootstrapped from, -1 if none
    bootstrap_discount: np.ndarray  # [S, K+1] D_n multiplying that bootstrap value
    bootstrap_value: np.ndarray  # [S, K+1] the stored value used (0 where none)
    turn_change: np.ndarray  # [S, K+1] float32, 1 where the move into step k passed the turn
    # Stochastic MuZero's afterstate Q targets with their own horizon (algo.q_td_steps), or
    # None: Q then learns ``value``.
    q_targets: NStepTargets | None = None


def available_memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


class EpisodeReplay:
    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        num_actions: int,
        algo: AlgoConfig,
        *,
        frame_stack: int = 1,
        prioritized: bool = True,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
    ):
        if capacity < 1:
            raise ValueError(f"replay capacity must be >= 1, got {capacity}")
        if frame_stack < 1 or obs_shape[0] % frame_stack:
            raise ValueError(
                f"observation's first axis {obs_shape[0]} is not a multiple of frame_stack="
                f"{frame_stack}"
            )
        self.capacity = int(capacity)
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.frame_shape = (obs_shape[0] // frame_stack, *obs_shape[1:])
        self.obs_dtype = np.dtype(obs_dtype)
        self.num_actions = int(num_actions)
        self.algo = algo  # unroll_steps (K), td_steps (n), discount, dynamic_td_every
        self.frame_stack = frame_stack  # observations hold this many frames on the first axis
        self.prioritized, self.alpha, self.beta, self.eps = prioritized, alpha, beta, eps
        self._check_memory()
        p, a = self.capacity, self.num_actions
        self.frames = np.zeros((p, *self.frame_shape), self.obs_dtype)
        self.actions = np.zeros(p, np.int64)
        self.rewards = np.zeros(p, np.float32)
        self.to_play = np.zeros(p, np.int8)
        self.policy = np.zeros((p, a), np.float32)
        self.root_value = np.zeros(p, np.float32)
        self.move_value = np.zeros(p, np.float32)
        self.legal = np.zeros((p, a), np.bool_)
        self.step_discount = np.zeros(p, np.float32)  # d[t] = +-gamma
        self.episode_start = np.zeros(p, np.int64)  # absolute positions
        self.episode_end = np.zeros(p, np.int64)  # exclusive
        self.terminated = np.zeros(p, np.bool_)
        self.final_value = np.zeros(p, np.float32)
        self.priorities = np.zeros(p, np.float64)
        self.sampleable = np.zeros(p, np.bool_)
        self.total_added = 0  # absolute index of the next position
        self.episodes_added = 0

    def bytes_per_position(self) -> int:
        frame = math.prod(self.frame_shape) * self.obs_dtype.itemsize
        return frame + self.num_actions * 5 + 8 * 8

    def _check_memory(self) -> None:
        needed = self.capacity * self.bytes_per_position()
        available = available_memory_bytes()
        if available is not None and needed > 0.8 * available:
            raise MemoryError(
                f"replay of {self.capacity} positions of {self.frame_shape} "
                f"{self.obs_dtype.name} frames needs {needed / 2**30:.1f} GiB, but only "
                f"{available / 2**30:.1f} GiB of memory is available; lower replay.capacity"
            )

    def __len__(self) -> int:
        return min(self.total_added, self.capacity)

    @property
    def oldest(self) -> int:
        return self.total_added - len(self)

    def add(self, episode: Episode) -> None:
        length = len(episode.actions)
        if length == 0:
            return
        if length > self.capacity:
            raise ValueError(
                f"an episode of {length} moves does not fit a replay of {self.capacity}"
            )
        start = self.total_added
        slots = (start + np.arange(length)) % self.capacity
        channels = self.frame_shape[0]
        self.frames[slots] = episode.obs[:, -channels:] if len(self.obs_shape) > 1 else episode.obs
        self.actions[slots] = episode.actions
        self.rewards[slots] = episode.rewards
        self.to_play[slots] = episode.to_play
        self.policy[slots] = episode.policy
        self.root_value[slots] = episode.root_value
        self.move_value[slots] = episode.move_value
        self.legal[slots] = episode.legal
        gamma = self.algo.discount
        self.step_discount[slots] = np.where(episode.turn_changes, -gamma, gamma)
        self.episode_start[slots] = start
        self.episode_end[slots] = start + length
        self.terminated[slots] = episode.terminated
        self.final_value[slots] = episode.final_value
        first = episode.context
        last = length if episode.sampleable is None else first + episode.sampleable
        sampleable = (np.arange(length) >= first) & (np.arange(length) < last)
        self.sampleable[slots] = sampleable
        top = self.priorities.max(initial=1.0) if len(self) else 1.0
        self.priorities[slots] = np.where(sampleable, top, 0.0)
        self.total_added += length
        self.episodes_added += 1

    # -- sampling ------------------------------------------------------------------------------

    def observations(self, positions: np.ndarray) -> np.ndarray:
        """Stacked observations ``[..., *obs_shape]`` at absolute ``positions [...]``."""
        positions = np.asarray(positions, np.int64)
        stack = self.frame_stack
        if stack == 1:
            return self.frames[positions % self.capacity]
        first = np.maximum(self.episode_start[positions % self.capacity], self.oldest)
        frames = [
            self.frames[np.maximum(positions - back, first) % self.capacity]
            for back in range(stack - 1, -1, -1)
        ]  # oldest first
        return np.concatenate(frames, axis=positions.ndim)

    def sample_positions(self, count: int, rng: np.random.Generator):
        size = len(self)
        if size == 0:
            raise ValueError("cannot sample from an empty replay")
        slots_in_order = (self.oldest + np.arange(size)) % self.capacity
        allowed = self.sampleable[slots_in_order]
        if self.prioritized:
            scaled = np.where(allowed, self.priorities[slots_in_order] ** self.alpha, 0.0)
            probs = scaled / scaled.sum()
            offsets = rng.choice(size, size=count, p=probs)
            weights = (allowed.sum() * probs[offsets]) ** -self.beta
            weights = (weights / weights.max()).astype(np.float32)
        elif allowed.all():
            offsets = rng.integers(0, size, size=count)
            weights = np.ones(count, np.float32)
        else:  # segments of long episodes hold positions that only serve as targets
            candidates = np.flatnonzero(allowed)
            offsets = candidates[rng.integers(0, len(candidates), size=count)]
            weights = np.ones(count, np.float32)
        return self.oldest + offsets, weights

    def sample(self, count: int, rng: np.random.Generator, *, future_obs: bool = False) -> Unroll:
        positions, weights = self.sample_positions(count, rng)
        return self.unroll(positions, weights, rng, future_obs=future_obs)

    def unroll(
        self,
        positions: np.ndarray,
        weights: np.ndarray,
        rng: np.random.Generator,
        *,
        future_obs: bool = False,
    ) -> Unroll:
        k_steps, n = self.algo.unroll_steps, self.algo.td_steps
        slot = positions % self.capacity
        end = self.episode_end[slot][:, None]  # [S, 1]
        terminated = self.terminated[slot][:, None]
        steps = positions[:, None] + np.arange(k_steps + 1)  # u = t + k, [S, K+1]
        inside = steps < end
        last = np.minimum(steps, end - 1)  # clamp past-the-end rows to stored positions
        horizon = self.td_horizon(positions)[:, None]  # [S, 1]
        value, boot_index, boot_discount, boot_value = self._n_step(
            steps, end, terminated, horizon, n
        )
        absorbing = ~inside & terminated
        reward = np.zeros_like(value)
        reward[:, 1:] = np.where(inside[:, :-1], self.rewards[last[:, :-1] % self.capacity], 0.0)
        policy = np.where(inside[..., None], self.policy[last % self.capacity], 0.0)
        reward_mask = np.zeros(value.shape, np.float32)
        reward_mask[:, 1:] = inside[:, :-1] | terminated
        random_actions = rng.integers(0, self.num_actions, size=(len(positions), k_steps))
        actions = np.where(
            inside[:, :-1], self.actions[last[:, :-1] % self.capacity], random_actions
        )
        passed = self.step_discount[last[:, :-1] % self.capacity] < 0
        turn_change = np.zeros(value.shape, np.float32)
        turn_change[:, 1:] = inside[:, :-1] & passed
        future = None
        if future_obs and k_steps:
            future = self.observations(last[:, 1:])
        q_targets = None
        if self.algo.q_td_steps:
            q_n = self.algo.q_td_steps
            q_horizon = np.full((len(positions), 1), q_n, np.int64)
            q_targets = self._masked_targets(
                *self._n_step(steps, end, terminated, q_horizon, q_n), inside
            )
        return Unroll(
            indices=positions,
            weights=weights,
            obs=self.observations(positions),
            future_obs=future,
            legal=self.legal[slot],
            actions=actions.astype(np.int64),
            policy=policy.astype(np.float32),
            reward=reward.astype(np.float32),
            policy_mask=inside.astype(np.float32),
            value_mask=(inside | absorbing).astype(np.float32),
            reward_mask=reward_mask,
            turn_change=turn_change,
            q_targets=q_targets,
            **self._masked_targets(value, boot_index, boot_discount, boot_value, inside)._asdict(),
        )

    @staticmethod
    def _masked_targets(value, boot_index, boot_discount, boot_value, inside) -> NStepTargets:
        """`_n_step`'s output with the rows past an episode's end zeroed (index -1)."""
        return NStepTargets(
            value=np.where(inside, value, 0.0).astype(np.float32),
            bootstrap_index=np.where(inside, boot_index, -1),
            bootstrap_discount=np.where(inside, boot_discount, 0.0).astype(np.float32),
            bootstrap_value=np.where(inside, boot_value, 0.0).astype(np.float32),
        )

    def td_horizon(self, positions: np.ndarray) -> np.ndarray:
        """``[S]`` n of each sample's value targets (all ``td_steps`` unless dynamic)."""
        n, every = self.algo.td_steps, self.algo.dynamic_td_every
        if not every:
            return np.full(len(positions), n, np.int64)
        age = self.total_added - positions
        return np.clip(n - age // every, 1, n)

    def _n_step(
        self,
        steps: np.ndarray,
        end: np.ndarray,
        terminated: np.ndarray,
        horizon: np.ndarray,
        n: int,
    ):
        """``horizon``-step returns (``horizon [S, 1] <= n``) from every ``u`` in ``steps
        [S, K+1]`` (rows past the end: garbage, masked by the caller)."""
        total = np.zeros(steps.shape, np.float64)
        discount = np.ones(steps.shape, np.float64)
        for i in range(n):
            u = steps + i
            if (u >= end).all():  # every row is past its episode's end: nothing more to add
                break
            live = (u < end) & (i < horizon)
            slot = np.minimum(u, end - 1) % self.capacity
            total += np.where(live, discount * self.rewards[slot], 0.0)
            discount = np.where(live, discount * self.step_discount[slot], discount)
        target = steps + horizon
        within = target < end
        # Bootstrap: the stored value at u+n inside the episode; at or past the end, nothing
        # after a termination, the recorded final value after a truncation.
        crosses_truncation = ~within & ~terminated
        stored = np.where(
            within,
            self.root_value[np.minimum(target, end - 1) % self.capacity],
            np.where(crosses_truncation, self.final_value[(end - 1) % self.capacity], 0.0),
        )
        used = within | crosses_truncation
        boot_discount = np.where(used, discount, 0.0)
        boot_index = np.where(within, target, -1)
        return total + boot_discount * stored, boot_index, boot_discount, stored * used

    def update_priorities(self, positions: np.ndarray, errors: np.ndarray) -> None:
        live = positions >= self.oldest  # a position overwritten since sampling keeps its new one
        self.priorities[positions[live] % self.capacity] = np.abs(errors[live]) + self.eps

    # -- checkpointing ---------------------------------------------------------------------------

    _ARRAYS = (
        "frames",
        "actions",
        "rewards",
        "to_play",
        "policy",
        "root_value",
        "move_value",
        "legal",
        "step_discount",
        "episode_start",
        "episode_end",
        "terminated",
        "final_value",
        "priorities",
        "sampleable",
    )

    def state_dict(self) -> dict:
        size = len(self)
        slots = (self.oldest + np.arange(size)) % self.capacity  # oldest first
        return {
            "capacity": self.capacity,
            "total_added": self.total_added,
            "episodes_added": self.episodes_added,
            "arrays": {name: torch.from_numpy(getattr(self, name)[slots]) for name in self._ARRAYS},
        }

    def load_state_dict(self, state: dict) -> None:
        if int(state["capacity"]) != self.capacity:
            raise ValueError(
                f"replay checkpoint has capacity {state['capacity']}; this run's is "
                f"{self.capacity} (replay.capacity)"
            )
        frames = state["arrays"]["frames"]
        if tuple(frames.shape[1:]) != self.frame_shape:
            raise ValueError(
                f"replay checkpoint holds frames of shape {tuple(frames.shape[1:])}; this run "
                f"stores {self.frame_shape}"
            )
        self.total_added = int(state["total_added"])
        self.episodes_added = int(state["episodes_added"])
        size = len(frames)
        slots = (self.total_added - size + np.arange(size)) % self.capacity
        arrays = dict(state["arrays"])
        # Replays saved before `move_value` was recorded: the root value stands in.
        arrays.setdefault("move_value", arrays["root_value"])
        for name in self._ARRAYS:
            getattr(self, name)[slots] = arrays[name].numpy()
