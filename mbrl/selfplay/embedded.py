"""The learner's side of self-play: the replay, its targets, and the exact replay ratio.

One data module for every algorithm and backend. Lightning drives training and pulls batches
from it. Before handing out the batch for gradient step ``g`` the module has its actors play until
``warmup_moves + ceil(g / replay_ratio)`` moves have been made, so gradient steps per move are
exactly the configured ratio (up to one batch of moves), whatever the speed of either side. The
actors search with their own copy of the network, which the learner publishes before collecting
once at least ``sync_every`` gradient steps have passed since the last publication.

The actors are the embedded backend's one in-process actor (``LocalActors``: everything seeded
and sequential, a run is reproducible from its seed) or Ray actors (``mbrl.distributed``), which
with ``max_weight_lag > 0`` play ahead of the learner, at most one request per actor ahead of
the ratio.

What differs between algorithms is the search's model and the targets read from the one episode
replay:

- learned models (MuZero, Gumbel MuZero, EfficientZero): K-step unroll targets, the n-step
  values refreshed by a target network (`mbrl.selfplay.reanalyze`);
- AlphaZero and Gumbel AlphaZero: the true game as the model, and the K = 0 unroll whose n-step
  value (n >= the game's length, discount 1) is the game's outcome for the player to move, mixed
  with weight ``algo.search_value_weight`` with the search's Q of the move played;
- the true-chance AlphaZero: the true game and its dice as the model, K = 0, and the n-step
  values of the learned models, mixed with the move's Q the same way; with
  ``algo.tree_value_weight`` each batch also carries as many ``(tree_obs, tree_value)`` pairs
  from the table of positions the searches found (`mbrl.selfplay.tree_values`), and before
  each batch the learner searches ``algo.tree_value_searches`` of them again.

The module's ``state_dict`` (replay, games in progress, RNG, counters) is saved inside every
Lightning checkpoint, which is what lets a killed run resume. With several learner devices
this module lives on rank 0 and hands each rank a slice of every batch (`data_parallel`).
"""

from __future__ import annotations

import collections
import math
import sys
import time
from collections.abc import Callable

import lightning as L
import numpy as np
import torch

from games.symmetry import BoardSymmetries
from mbrl.config import AlgoConfig, TrainerConfig
from mbrl.replay.episodes import EpisodeReplay
from mbrl.selfplay.batch_stream import stream_loader
from mbrl.selfplay.data_parallel import gather_priorities, scatter_batch
from mbrl.selfplay.reanalyze import Reanalyzer
from mbrl.selfplay.tree_values import PositionTable
from search import SearchSettings


def scheduled_temperature(schedule, progress: float) -> float:
    temperature = schedule[0][1]
    for start, value in schedule:
        if progress >= start:
            temperature = value
    return float(temperature)


class SelfPlayDataModule(L.LightningDataModule):
    def __init__(
        self,
        actors,  # LocalActors or mbrl.distributed.RayActors
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
        remote_reanalysis=None,  # mbrl.distributed.RayReanalyzers (learned models)
        positions: PositionTable | None = None,  # the search trees' positions and targets
    ):
        super().__init__()
        self.loop, self.algo, self.replay = loop, algo, replay
        self.two_player = two_player
        self.symmetries = symmetries  # None: samples as played
        # AlphaZero: the K = 0 targets, value = the outcome (mixed with the search's Q)
        self.outcome_targets = outcome_targets
        self.learner_network = learner_network
        self.actors = actors
        actors.deliver = self._add_episodes
        self.positions = positions
        self.positions_searched = 0
        if positions is not None:
            actors.deliver_tree_nodes = positions.add
        self.reanalyzer = None
        if not outcome_targets:
            self.reanalyzer = Reanalyzer(
                learner_network, make_model, replay, search, algo, remote=remote_reanalysis
            )
        # Remote reanalysis: batches sampled ahead, reanalysed while the learner trains.
        self.pipeline: collections.deque = collections.deque()
        self.rng = np.random.default_rng(seed)
        self.gradient_steps = 0
        self.last_sync = 0
        self.collect_seconds = 0.0
        # Resumed from a checkpoint without replay (a step checkpoint, when last.ckpt was
        # unreadable): play on to this many moves before sampling, as a fresh run's warm-up.
        self.refill_until = 0
        self.temperature = 1.0
        self.game_lengths: list[int] = []
        self.world_size = 1

    def setup(self, stage: str) -> None:
        """Self-play searches on the learner's device (a GPU when training on one)."""
        trainer = getattr(self, "trainer", None)
        if trainer is not None:
            self.world_size = trainer.world_size  # > 1: slices for the other ranks (DDP)
            self.actors.to(trainer.strategy.root_device)
            if self.reanalyzer is not None:
                self.reanalyzer.network.to(trainer.strategy.root_device)

    def teardown(self, stage: str) -> None:
        if self.reanalyzer is not None and self.reanalyzer.remote is not None:
            self.reanalyzer.remote.close()
        self.actors.close()  # last: it shuts down the Ray it started

    @property
    def moves_played(self) -> int:
        return self.actors.moves_played

    # -- the exact replay ratio ---------------------------------------------------------------

    def train_dataloader(self):
        trainer = getattr(self, "trainer", None)
        return stream_loader(self, 0 if trainer is None else trainer.max_steps)

    def moves_needed(self, gradient_steps: int) -> int:
        return self.loop.warmup_moves + math.ceil(gradient_steps / self.loop.replay_ratio)

    def next_batch(self) -> dict[str, torch.Tensor]:
        self.gradient_steps += 1
        needed = max(self.moves_needed(self.gradient_steps), self.refill_until)
        self._update_temperature()
        start = time.perf_counter()
        self.actors.poll(needed, self.temperature)  # actors ahead of the learner: what is ready
        if self.actors.asynchronous or self.moves_played < needed or not len(self.replay):
            self._sync_weights()
        while self.moves_played < needed or not len(self.replay):
            self.actors.collect(needed, self.temperature)
        self._search_positions()
        self.collect_seconds += time.perf_counter() - start
        if self.world_size > 1:  # rank 0 of a DDP learner: every rank trains on a slice
            return scatter_batch(self.sample_batch(), self.world_size)
        return self.sample_batch()

    def _search_positions(self) -> None:
        """Search again from ``algo.tree_value_searches`` positions of the table, drawn equally
        often (its rare positions as often as the common ones)."""
        count = self.algo.tree_value_searches
        if self.positions is None or not count or not len(self.positions):
            return
        states = self.positions.sample_states(count, self.rng)
        self.positions.add(self.actors.search_positions(states, int(self.rng.integers(2**62))))
        self.positions_searched += count

    def _sync_weights(self) -> None:
        if self.gradient_steps - self.last_sync >= self.loop.sync_every or self.last_sync == 0:
            self.actors.publish(self.learner_network)
            self.last_sync = max(self.gradient_steps, 1)

    def _update_temperature(self) -> None:
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.max_steps > 0:
            progress = self.gradient_steps / trainer.max_steps
            self.temperature = scheduled_temperature(self.algo.temperature_schedule, progress)

    def _add_episodes(self, episodes) -> None:
        """Finished episodes (and segments of long ones) to replay."""
        for episode in episodes:
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
        value = self._mix_in_search_value(unroll.value[:, 0], unroll.indices)
        return {
            "obs": unroll.obs,
            "legal": unroll.legal,
            "policy": unroll.policy[:, 0],
            "value": value.astype(np.float32),
            "weights": unroll.weights,
            "indices": unroll.indices,
        }

    def _mix_in_search_value(self, value: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """``[B]`` ``(1 - w) * value + w * the search's Q of the move played`` at the replay
        positions ``indices``, ``w = algo.search_value_weight``, in ``value``'s dtype."""
        weight = self.algo.search_value_weight
        move_value = self.replay.move_value[indices % self.replay.capacity]
        return ((1.0 - weight) * value + weight * move_value).astype(value.dtype)

    def _unroll_batch(self) -> dict[str, np.ndarray]:
        self.reanalyzer.refresh(self.gradient_steps)
        if self.reanalyzer.remote is None:
            unroll = self._sample_unroll()
            targets = self.reanalyzer.targets(unroll)
        else:  # keep `depth` batches in the workers while this one trains
            while len(self.pipeline) <= self.reanalyzer.remote.depth:
                unroll = self._sample_unroll()
                self.pipeline.append((unroll, self.reanalyzer.submit(unroll)))
            unroll, ticket = self.pipeline.popleft()
            targets = self.reanalyzer.collect(unroll, ticket)
        value = targets.value
        if self.algo.search_value_weight:  # the true-chance AlphaZero: K = 0 (validation)
            value = self._mix_in_search_value(value[:, 0], unroll.indices)[:, None]
        batch = {
            "obs": unroll.obs,
            "legal": unroll.legal,
            "actions": unroll.actions,
            "policy": targets.policy,
            "reward": unroll.reward,
            "value": value,
            "policy_mask": unroll.policy_mask,
            "value_mask": unroll.value_mask,
            "reward_mask": unroll.reward_mask,
            "turn_change": unroll.turn_change,
            "weights": unroll.weights,
            "indices": unroll.indices,
        }
        if unroll.future_obs is not None:
            batch["future_obs"] = unroll.future_obs
        if self.positions is not None and self.positions.valued:
            batch["tree_obs"], batch["tree_value"] = self.positions.sample_targets(
                self.loop.batch_size, self.rng
            )
        if targets.q_value is not None:
            batch["q_value"] = targets.q_value
        return batch

    def _sample_unroll(self):
        # EfficientZero's consistency and Stochastic MuZero's chance encoder read o_t+1..o_t+K
        future_obs = self.algo.consistency_weight > 0 or self.algo.name == "stochastic_muzero"
        return self.replay.sample(self.loop.batch_size, self.rng, future_obs=future_obs)

    def update_priorities(self, indices: torch.Tensor, errors: torch.Tensor) -> None:
        """New priorities from the learner (from every rank's slice, with several devices)."""
        if self.world_size > 1:
            indices, errors = gather_priorities(indices, errors)
        if self.replay.prioritized:
            self.replay.update_priorities(indices.cpu().numpy(), errors.float().cpu().numpy())

    # -- logging ---------------------------------------------------------------------------------

    def stats(self) -> dict[str, float]:
        """Counters for logging: totals, and means over the games finished since the last call."""
        counters = self.actors.counters()
        if not self.two_player:
            del counters["resignations"], counters["resigned_wrongly"]
        out = {f"selfplay/{name}": value for name, value in counters.items()}
        out["replay/size"] = float(len(self.replay))
        if self.positions is not None:
            out["replay/positions"] = float(len(self.positions))
            out["replay/positions_valued"] = float(self.positions.valued)
            out["replay/position_targets"] = float(self.positions.targets_added)
            out["selfplay/positions_searched"] = float(self.positions_searched)
        out["selfplay/collect_seconds"] = self.collect_seconds  # the learner's wait, all told
        out["selfplay/temperature"] = self.temperature
        if self.reanalyzer is not None:  # with remote workers: the learner's wait for them
            out["selfplay/reanalyze_seconds"] = self.reanalyzer.seconds
            if self.reanalyzer.remote is not None:
                out["ray/reanalyzer_restarts"] = float(self.reanalyzer.remote.restarts)
        out.update(self.actors.stats())  # the backend's own (Ray: weight lag, queues, ...)
        recent = np.asarray(self.actors.take_returns())
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
            **self.actors.state_dict(),  # "actor_network", "actor" (and Ray's other actors)
            "rng": self.rng.bit_generator.state,
            "gradient_steps": self.gradient_steps,
            "last_sync": self.last_sync,
            "refill_until": self.refill_until,
            "replay": self.replay.state_dict(),
        }
        if self.reanalyzer is not None:
            state.update(self.reanalyzer.state_dict())
        if self.positions is not None:
            state["tree_values"] = self.positions.state_dict()
            state["positions_searched"] = self.positions_searched
        return state

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.gradient_steps = int(state["gradient_steps"])
        self.last_sync = int(state["last_sync"])
        self.refill_until = int(state.get("refill_until", 0))
        if "history" in state["actor"]:  # the AlphaZero loop before one self-play stack
            self._restart_from_positions(state)
            return
        self.actors.load_state_dict(state)
        if self.reanalyzer is not None:
            self.reanalyzer.load_state_dict(state)
        self.restore_replay(state["replay"])
        if self.positions is not None:
            self.positions_searched = int(state.get("positions_searched", 0))
            if state.get("tree_values") is not None:
                self.positions.load_state_dict(state["tree_values"])

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
        actor = {
            "next_episode_id": old["next_game_id"],
            "moves_played": old["moves_played"],
            "episodes_finished": old["games_finished"],
            "simulations": old["simulations"],
        }
        self.actors.load_state_dict({"actor_network": state["actor_network"], "actor": actor})
        self.restore_replay(None)
        print(
            "this checkpoint's replay holds positions (written before one self-play stack): "
            f"self-play refills {self.loop.warmup_moves} moves before training goes on",
            file=sys.stderr,
        )
