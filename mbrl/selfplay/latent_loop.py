"""The embedded loop for learned-model agents (MuZero, EfficientZero, Gumbel MuZero).

Same exact replay ratio as AlphaZero's loop (``EmbeddedLoop``); what differs is the data. The
actor plays whole episodes of a batched environment with a ``LatentModel`` search; replay
stores episodes; a batch is K-step unroll targets. A target network (a copy of the learner
refreshed every ``target_update_every`` gradient steps) re-estimates the n-step bootstrap values
on every sample when ``reanalyze_value`` is on (EfficientZero), and re-runs the search for a
``reanalyze_policy`` fraction of the samples to refresh their policy targets (MuZero Reanalyze).
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch

import search
from games.symmetry import BoardSymmetries
from mbrl.config import AlgoConfig, TrainerConfig
from mbrl.replay.episodes import EpisodeReplay, Unroll
from mbrl.selfplay.embedded import EmbeddedLoop
from mbrl.selfplay.episode_actor import EpisodeActor
from mbrl.selfplay.latent_model import LatentModel
from search import SearchSettings


def scheduled_temperature(schedule, progress: float) -> float:
    temperature = schedule[0][1]
    for start, value in schedule:
        if progress >= start:
            temperature = value
    return float(temperature)


class LatentSelfPlayDataModule(EmbeddedLoop):
    def __init__(
        self,
        env,
        learner_network: torch.nn.Module,
        search: SearchSettings,
        loop: TrainerConfig,
        algo: AlgoConfig,
        replay: EpisodeReplay,
        *,
        seed: int,
        two_player: bool = False,
        symmetries: BoardSymmetries | None = None,
    ):
        super().__init__(learner_network, loop, seed=seed)
        self.env, self.search, self.algo, self.replay = env, search, algo, replay
        self.two_player = two_player
        self.symmetries = symmetries  # None: samples as played
        model_args = dict(
            discount=algo.discount,
            two_player=two_player,
            value_prefix_horizon=algo.value_prefix_horizon,
        )
        self.model = LatentModel(self.actor_network, **model_args)
        self.target_network = copy.deepcopy(learner_network).eval().requires_grad_(False)
        self.target_model = LatentModel(self.target_network, **model_args)
        self.last_target_update = 0
        frame_channels = None
        if len(replay.obs_shape) > 1:
            frame_channels = replay.frame_shape[0]
        self.actor = EpisodeActor(
            env,
            self.model,
            search,
            seed=seed,
            frame_channels=frame_channels,
            two_player=two_player,
            temperature_moves=loop.temperature_moves,
            value_prefix_horizon=algo.value_prefix_horizon,
            segment_length=algo.segment_length,
            segment_overlap=algo.td_steps + algo.unroll_steps,
            frame_stack=replay.frame_stack,
            random_opening_moves=loop.random_opening_moves,
        )
        self.reanalyze_seconds = 0.0
        self._returns_logged = 0

    def networks_to_place(self) -> list[torch.nn.Module]:
        return [self.actor_network, self.target_network]

    @property
    def moves_played(self) -> int:
        return self.actor.moves_played

    def has_data(self) -> bool:
        return len(self.replay) > 0

    def collect(self) -> None:
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.max_steps > 0:
            progress = self.gradient_steps / trainer.max_steps
            self.actor.temperature = scheduled_temperature(self.algo.temperature_schedule, progress)
        for episode in self.actor.step():
            self.replay.add(episode)

    def _refresh_target(self) -> None:
        if self.gradient_steps - self.last_target_update >= self.algo.target_update_every:
            self.target_network.load_state_dict(self.learner_network.state_dict())
            self.last_target_update = self.gradient_steps

    def sample_batch(self) -> dict[str, torch.Tensor]:
        self._refresh_target()
        unroll = self.replay.sample(
            self.loop.batch_size, self.rng, future_obs=self.algo.consistency_weight > 0
        )
        start = time.perf_counter()
        value = unroll.value
        if self.algo.reanalyze_value:
            value = self._reanalyzed_values(unroll)
        policy = unroll.policy
        if self.algo.reanalyze_policy > 0:
            policy = self._reanalyzed_policy(unroll)
        self.reanalyze_seconds += time.perf_counter() - start
        batch = {
            "obs": unroll.obs,
            "legal": unroll.legal,
            "actions": unroll.actions,
            "policy": policy,
            "reward": unroll.reward,
            "value": value,
            "policy_mask": unroll.policy_mask,
            "value_mask": unroll.value_mask,
            "reward_mask": unroll.reward_mask,
            "weights": unroll.weights,
            "indices": unroll.indices,
        }
        if unroll.future_obs is not None:
            batch["future_obs"] = unroll.future_obs
        if self.symmetries is not None:
            batch = self.symmetries.augment(batch, self.rng)
        return {name: torch.from_numpy(np.ascontiguousarray(v)) for name, v in batch.items()}

    def _reanalyzed_values(self, unroll: Unroll) -> np.ndarray:
        """n-step targets with the bootstrap values recomputed by the target network."""
        where = unroll.bootstrap_index >= 0
        if not where.any():
            return unroll.value
        fresh = self.target_model.values(self.replay.observations(unroll.bootstrap_index[where]))
        new_boot = unroll.bootstrap_value.copy()
        new_boot[where] = fresh
        delta = unroll.bootstrap_discount * (new_boot - unroll.bootstrap_value)
        return (unroll.value + delta).astype(np.float32)

    def _reanalyzed_policy(self, unroll: Unroll) -> np.ndarray:
        """Fresh search policies (target network, no noise) for a fraction of the samples."""
        count = round(self.algo.reanalyze_policy * len(unroll.indices))
        policy = unroll.policy.copy()
        inside = unroll.policy_mask[:count] > 0  # [count, K+1]
        if count == 0 or not inside.any():
            return policy
        positions = (unroll.indices[:count, None] + np.arange(inside.shape[1]))[inside]
        obs = self.replay.observations(positions)
        legal = self.replay.legal[positions % self.replay.capacity]
        root = self.target_model.root(obs)
        output = search.run(
            root,
            self.target_model.recurrent_fn,
            self.search,
            legal_mask=legal,
            keys=positions.astype(np.uint64),
            deterministic=self.search.policy == "puct",
            value_prefix_horizon=self.algo.value_prefix_horizon or None,
        )
        rows = policy[:count]
        rows[inside] = output.action_weights
        return policy

    def stats(self) -> dict[str, float]:
        actor = self.actor
        out = {
            **self.counters(actor.episodes_finished),
            "selfplay/env_seconds": actor.env_seconds,
            "selfplay/reanalyze_seconds": self.reanalyze_seconds,
            "selfplay/network_seconds": self.model.network_seconds,
            "selfplay/temperature": actor.temperature,
        }
        recent = actor.returns[self._returns_logged :]
        if recent:
            out["selfplay/episode_return"] = float(np.mean(recent))
            self._returns_logged = len(actor.returns)
        return out

    def state_dict(self) -> dict:
        return {
            **super().state_dict(),
            "replay": self.replay.state_dict(),
            "actor": self.actor.state_dict(),
            "target_network": self.target_network.state_dict(),
            "last_target_update": self.last_target_update,
        }

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.actor.load_state_dict(state["actor"])
        self.restore_replay(state["replay"])
        self.target_network.load_state_dict(state["target_network"])
        self.last_target_update = int(state["last_target_update"])
