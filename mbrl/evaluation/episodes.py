"""Single-agent evaluation: play whole episodes with a fixed policy and report their returns.

B environment slots in lockstep; a slot that finishes starts another episode until ``episodes``
have been started, so every episode runs to its own end (termination or the task's time limit).
Returns are summed from the environment's rewards, so an evaluation-mode environment (Atari:
no reward clipping, no life loss) gives raw scores.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from games import TimeStep


def run_episodes(
    env, act: Callable[[TimeStep], np.ndarray], episodes: int, *, seed: int
) -> np.ndarray:
    """``act(timestep) -> actions [B]``; returns ``[episodes]`` undiscounted returns in the
    order the episodes started."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    slots = min(env.batch_size, episodes)
    episode_of = np.full(env.batch_size, -1)
    episode_of[:slots] = np.arange(slots)
    returns = np.zeros(episodes, np.float64)
    ts = env.reset(seeds=[seed + i for i in range(env.batch_size)])
    started = slots
    while (episode_of >= 0).any():
        ts = env.step(act(_any_move_where_finished(ts)))
        live = episode_of >= 0
        np.add.at(returns, episode_of[live], ts.reward[live])
        done = np.flatnonzero(ts.done & live)
        if len(done):
            episode_of[done] = -1
            restart = done[: max(0, episodes - started)]
            if len(restart):
                episode_of[restart] = started + np.arange(len(restart))
                ts = env.reset(
                    seeds=[seed + started + i for i in range(len(restart))], indices=restart
                )
                started += len(restart)
    return returns


def acting_in(env, agent) -> Callable[[TimeStep], np.ndarray]:
    """``agent.act`` on ``env``'s timesteps, given the games' states too where the env has them
    (a model that searches the true game, like the true-chance AlphaZero's, needs them)."""

    def act(timestep: TimeStep) -> np.ndarray:
        return agent.act(timestep, getattr(env, "states", None))

    return act


def _any_move_where_finished(ts: TimeStep) -> TimeStep:
    """Finished slots (no legal move in a board or chance game) take any action, which the
    environment ignores; the search refuses a root without a legal move."""
    stuck = ~ts.legal.any(1)
    if not stuck.any():
        return ts
    return ts._replace(legal=np.where(stuck[:, None], True, ts.legal))
