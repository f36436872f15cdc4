"""Gymnasium's classic-control tasks (CartPole-v1, Acrobot-v1, ...) behind the games protocol.

B independent Gymnasium environments in lockstep. ``step`` moves every unfinished episode; a
finished slot (terminated, or truncated by the task's time limit: 500 steps for CartPole-v1)
stays finished, with reward 0, until ``reset`` is called for it, exactly like ``BoardGameEnv``.
Single agent: ``to_play`` is 0 and every action is legal.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from games.timestep import TimeStep, batch_actions, reset_indices

CLASSIC_TASKS = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0", "LunarLander-v3")


class ClassicControlEnv:
    def __init__(self, name: str, batch_size: int):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        try:
            self.envs = [gym.make(name) for _ in range(batch_size)]
        except gym.error.Error as error:
            raise ValueError(
                f"unknown Gymnasium task {name!r} ({error}); discrete-action tasks that work: "
                f"{CLASSIC_TASKS}"
            ) from error
        space = self.envs[0].action_space
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(f"task {name!r} has action space {space}; a Discrete one is needed")
        self.name = name
        self.batch_size = batch_size
        self.num_actions = int(space.n)
        self.obs_shape = tuple(self.envs[0].observation_space.shape)
        self._obs = np.zeros((batch_size, *self.obs_shape), np.float32)
        self._reward = np.zeros(batch_size, np.float32)
        self._terminated = np.ones(batch_size, np.bool_)
        self._truncated = np.zeros(batch_size, np.bool_)

    @property
    def spec(self) -> dict:
        return {
            "kind": "classic",
            "name": self.name,
            "obs_shape": list(self.obs_shape),
            "num_actions": self.num_actions,
        }

    def reset(self, seeds=None, indices=None) -> TimeStep:
        for i, b in enumerate(reset_indices(indices, self.batch_size)):
            seed = None if seeds is None else int(seeds[i])
            obs, _ = self.envs[b].reset(seed=seed)
            self._obs[b] = obs
            self._reward[b] = 0.0
            self._terminated[b] = self._truncated[b] = False
        return self.timestep()

    def step(self, actions) -> TimeStep:
        actions = batch_actions(actions, self.batch_size)
        for b, action in enumerate(actions.tolist()):
            if self._terminated[b] or self._truncated[b]:
                self._reward[b] = 0.0
                continue
            obs, reward, terminated, truncated, _ = self.envs[b].step(int(action))
            self._obs[b] = obs
            self._reward[b] = reward
            self._terminated[b], self._truncated[b] = terminated, truncated and not terminated
        return self.timestep()

    def timestep(self) -> TimeStep:
        return TimeStep(
            obs=self._obs.copy(),
            legal=np.ones((self.batch_size, self.num_actions), np.bool_),
            to_play=np.zeros(self.batch_size, np.int64),
            reward=self._reward.copy(),
            terminated=self._terminated.copy(),
            truncated=self._truncated.copy(),
        )
