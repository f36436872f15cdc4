"""The embedded self-play loop: actor and learner in one process, with an exact replay ratio.

One data module for every algorithm. Lightning drives training and pulls batches from it. Before
handing out the batch for gradient step ``g`` the module plays until ``warmup_moves + ceil(g /
replay_ratio)`` moves have been made, so gradient steps per move are exactly the configured
ratio (up to one batch of moves), whatever the speed of either side. Everything is seeded and
sequential, so a run is reproducible from its seed. The actor searches with its own copy of the
network, refreshed from the learner before collecting once at least ``sync_every`` gradient steps
have passed since the last refresh.

What differs between algorithms is the search's model and the targets read from the one episode
replay:

- learned models (MuZero, Gumbel MuZero, EfficientZero): K-step unroll targets, the n-step
  values refreshed by a target network (`mbrl.selfplay.reanalyze`);
- AlphaZero and Gumbel AlphaZero: the true game as the model, and the K = 0 unroll whose n-step
  value (n >= the game's length, discount 1) is the game's outcome for the player to move, mixed
  with weight ``algo.search_value_weight`` with the search's Q of the move played.

The module's ``state_dict`` (replay, games in progress, RNG, counters) is saved inside every
Lightning checkpoint, which is what lets a killed run resume.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from collections.abc import Callable

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from games.symmetry import BoardSymmetries
from mbrl.config import AlgoConfig, TrainerConfig
from mbrl.replay.episodes import EpisodeReplay
from mbrl.selfplay.actor import SelfPlayActor
from mbrl.selfplay.reanalyze import Reanalyzer
from search import SearchSettings


def scheduled_temperature(schedule, progress: float) -> float:
    temperature = schedule[0][1]
    for start, value in schedule:
        if progress >= start:
            temperature = value
    return float(temperature)


class BatchStream(IterableDataset):
    """Endless batches. It reports a length so that Lightning does not fetch a batch ahead:
    a prefetched batch would be sampled (and its moves played) before the checkpoint of the
    previous step, and lost on resume."""

    def __init__(self, source, length: int):  # source.next_batch() -> the next batch
        self.source = source
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __iter__(self):
        while (batch := self.source.next_batch()) is not None:  # None: the source is done
            yield batch


class SelfPlayDataModule(L.LightningDataModule):
    def __init__(
        self,
        env,
        learner_network: torch.nn.Module,
        make_model: Callable,  # network -> the search's model (GameModel or LatentModel)
        search: SearchSettings,
        loop: TrainerConfig,
        algo: AlgoConfig,
        replay: EpisodeReplay,
        *,
        seed: int,
        two_player: bool = False,
        symmetries: BoardSymmetries | None = None,
        outcome_targets: bool = False,
    ):
        super().__init__()
        self.loop, self.algo, self.replay = loop, algo, replay
        self.two_player = two_player
        self.symmetries = symmetries  # None: samples as played
        # AlphaZero: the K = 0 targets, value = the outcome (mixed with the search's Q)
        self.outcome_targets = outcome_targets
        self.learner_network = learner_network
        self.actor_network = copy.deepcopy(learner_network).eval().requires_grad_(False)
        self.model = make_model(self.actor_network)
        self.reanalyzer = None
        if not outcome_targets:
            self.reanalyzer = Reanalyzer(learner_network, make_model, replay, search, algo)
        self.rng = np.random.default_rng(seed)
        self.gradient_steps = 0
        self.last_sync = 0
        self.collect_seconds = 0.0
        # Resumed from a checkpoint without replay (a step checkpoint, when last.ckpt was
        # unreadable): play on to this many moves before sampling, as a fresh run's warm-up.
        self.refill_until = 0
        self.actor = SelfPlayActor(
            env,
            self.model,
            search,
            seed=seed,
            frame_channels=replay.frame_shape[0] if len(replay.obs_shape) > 1 else None,
            two_player=two_player,
            temperature_moves=loop.temperature_moves,
            segment_length=algo.segment_length,
            segment_overlap=replay.algo.td_steps + replay.algo.unroll_steps,
            frame_stack=replay.frame_stack,
            random_opening_moves=loop.random_opening_moves,
            resign_threshold=loop.resign_threshold,
            bootstrap_truncation=not outcome_targets,  # AlphaZero: a cut-off game is a draw
        )
        self.game_lengths: list[int] = []
        self._returns_logged = 0

    def setup(self, stage: str) -> None:
        """Self-play searches on the learner's device (a GPU when training on one)."""
        trainer = getattr(self, "trainer", None)
        if trainer is not None:
            self.actor_network.to(trainer.strategy.root_device)
            if self.reanalyzer is not None:
                self.reanalyzer.network.to(trainer.strategy.root_device)

    @property
    def moves_played(self) -> int:
        return self.actor.moves_played

    # -- the exact replay ratio ---------------------------------------------------------------

    def train_dataloader(self):
        trainer = getattr(self, "trainer", None)
        length = trainer.max_steps if trainer is not None and trainer.max_steps > 0 else 2**62
        return DataLoader(BatchStream(self, length), batch_size=None, num_workers=0)

    def moves_needed(self, gradient_steps: int) -> int:
        return self.loop.warmup_moves + math.ceil(gradient_steps / self.loop.replay_ratio)

    def next_batch(self) -> dict[str, torch.Tensor]:
        self.gradient_steps += 1
        needed = max(self.moves_needed(self.gradient_steps), self.refill_until)
        if self.moves_played < needed or not len(self.replay):
            self._sync_weights()
        while self.moves_played < needed or not len(self.replay):
            start = time.perf_counter()
            self.collect()
            self.collect_seconds += time.perf_counter() - start
        return self.sample_batch()

    def _sync_weights(self) -> None:
        if self.gradient_steps - self.last_sync >= self.loop.sync_every or self.last_sync == 0:
            self.actor_network.load_state_dict(self.learner_network.state_dict())
            self.last_sync = max(self.gradient_steps, 1)

    def collect(self) -> None:
        """One move in every game; finished episodes (and segments of long ones) to replay."""
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.max_steps > 0:
            progress = self.gradient_steps / trainer.max_steps
            self.actor.temperature = scheduled_temperature(self.algo.temperature_schedule, progress)
        for episode in self.actor.step():
            self.replay.add(episode)
            if episode.sampleable is None and episode.context == 0:  # a whole game
                self.game_lengths.append(len(episode.actions))

    # -- batches ---------------------------------------------------------------------------------

    def sample_batch(self) -> dict[str, torch.Tensor]:
        if self.outcome_targets:
            batch = self._outcome_batch()
        else:
            batch = self._unroll_batch()
        if self.symmetries is not None:
            batch = self.symmetries.augment(batch, self.rng)
        return {name: torch.from_numpy(np.ascontiguousarray(v)) for name, v in batch.items()}

    def _outcome_batch(self) -> dict[str, np.ndarray]:
        """AlphaZero's positions: the search's policy and ``(1 - w) * outcome + w * move Q``
        (one game's outcome is a noisy sample, the search's Q a biased but steadier estimate of
        the same game's continuation)."""
        unroll = self.replay.sample(self.loop.batch_size, self.rng)
        weight = self.algo.search_value_weight
        move_value = self.replay.move_value[unroll.indices % self.replay.capacity]
        value = (1.0 - weight) * unroll.value[:, 0] + weight * move_value
        return {
            "obs": unroll.obs,
            "legal": unroll.legal,
            "policy": unroll.policy[:, 0],
            "value": value.astype(np.float32),
            "weights": unroll.weights,
            "indices": unroll.indices,
        }

    def _unroll_batch(self) -> dict[str, np.ndarray]:
        self.reanalyzer.refresh(self.gradient_steps)
        unroll = self.replay.sample(
            self.loop.batch_size, self.rng, future_obs=self.algo.consistency_weight > 0
        )
        value, policy = self.reanalyzer.targets(unroll)
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
        return batch

    def update_priorities(self, indices: torch.Tensor, errors: torch.Tensor) -> None:
        """New priorities from the learner."""
        if self.replay.prioritized:
            self.replay.update_priorities(indices.cpu().numpy(), errors.float().cpu().numpy())

    # -- logging ---------------------------------------------------------------------------------

    def stats(self) -> dict[str, float]:
        """Counters for logging: totals, and means over the games finished since the last call."""
        actor = self.actor
        out = {
            "selfplay/moves": float(actor.moves_played),
            "selfplay/games": float(actor.episodes_finished),
            "selfplay/simulations": float(actor.simulations),
            "replay/size": float(len(self.replay)),
            "selfplay/collect_seconds": self.collect_seconds,
            "selfplay/search_seconds": actor.search_seconds,
            "selfplay/env_seconds": actor.env_seconds,
            "selfplay/network_calls": float(self.model.network_calls),
            "selfplay/network_seconds": self.model.network_seconds,
            "selfplay/temperature": actor.temperature,
        }
        if self.reanalyzer is not None:
            out["selfplay/reanalyze_seconds"] = self.reanalyzer.seconds
        if self.two_player:
            out["selfplay/resignations"] = float(actor.resignations)
            out["selfplay/resigned_wrongly"] = float(actor.resigned_wrongly)
        recent = np.asarray(actor.returns[self._returns_logged :])
        self._returns_logged = len(actor.returns)
        if len(recent):
            out["selfplay/episode_return"] = float(recent.mean())
            if self.two_player:  # player 0 moves first
                out["selfplay/first_player_win"] = float((recent > 0).mean())
                out["selfplay/draw"] = float((recent == 0).mean())
        if self.game_lengths:
            out["selfplay/game_length"] = float(np.mean(self.game_lengths))
            self.game_lengths.clear()
        return out

    # -- checkpointing ---------------------------------------------------------------------------

    def state_dict(self) -> dict:
        state = {
            "actor_network": self.actor_network.state_dict(),
            "rng": self.rng.bit_generator.state,
            "gradient_steps": self.gradient_steps,
            "last_sync": self.last_sync,
            "refill_until": self.refill_until,
            "replay": self.replay.state_dict(),
            "actor": self.actor.state_dict(),
        }
        if self.reanalyzer is not None:
            state.update(self.reanalyzer.state_dict())
        return state

    def load_state_dict(self, state: dict) -> None:
        self.actor_network.load_state_dict(state["actor_network"])
        self.rng.bit_generator.state = state["rng"]
        self.gradient_steps = int(state["gradient_steps"])
        self.last_sync = int(state["last_sync"])
        self.refill_until = int(state.get("refill_until", 0))
        if "history" in state["actor"]:  # the AlphaZero loop before one self-play stack
            self._restart_from_positions(state)
            return
        self.actor.load_state_dict(state["actor"])
        if self.reanalyzer is not None:
            self.reanalyzer.load_state_dict(state)
        self.restore_replay(state["replay"])

    def restore_replay(self, replay_state: dict | None) -> None:
        """The replay from a checkpoint; a step checkpoint holds none (only last.ckpt does),
        and then self-play refills a warm-up's worth of moves (``refill_until``)."""
        if replay_state is not None:
            self.replay.load_state_dict(replay_state)
        else:
            self.refill_until = self.moves_played + self.loop.warmup_moves

    def _restart_from_positions(self, state: dict) -> None:
        """A checkpoint of AlphaZero's former loop stored positions, not episodes: its weights
        and counters go on, its games restart and self-play refills the replay."""
        old = state["actor"]
        self.actor.load_state_dict(
            {
                "next_episode_id": old["next_game_id"],
                "moves_played": old["moves_played"],
                "episodes_finished": old["games_finished"],
                "simulations": old["simulations"],
            }
        )
        self.restore_replay(None)
        print(
            "this checkpoint's replay holds positions (written before one self-play stack): "
            f"self-play refills {self.loop.warmup_moves} moves before training goes on",
            file=sys.stderr,
        )
