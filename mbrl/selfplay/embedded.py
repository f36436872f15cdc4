"""The embedded self-play loop: actors and learner in one process, with an exact replay ratio.

Lightning drives training and pulls batches from this data module. Before handing out the batch
for gradient step ``g`` the module plays until ``warmup_moves + ceil(g / replay_ratio)``
environment moves have been made, so gradient steps per environment step are exactly the
configured ratio (up to one batch of moves), whatever the speed of either side. Everything is
seeded and sequential, so a run is reproducible from its seed. The actor searches with its own
copy of the network, refreshed from the learner before collecting once at least ``sync_every``
gradient steps have passed since the last refresh.

The module's ``state_dict`` (replay, games in progress, RNG, counters) is saved inside every
Lightning checkpoint, which is what lets a killed run resume.
"""

from __future__ import annotations

import copy
import math
import time

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from games import BoardGame
from games.symmetry import BoardSymmetries
from mbrl.config import TrainerConfig
from mbrl.replay import ReplayBuffer
from mbrl.replay.targets import alphazero_fields, alphazero_positions
from mbrl.selfplay.actor import SelfPlayActor
from mbrl.selfplay.game_model import GameModel
from search import SearchSettings


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


class EmbeddedLoop(L.LightningDataModule):
    """What every embedded loop shares: the exact replay ratio, the sized batch stream and the
    actor's copy of the network. Subclasses play (``collect``), count (``moves_played``) and
    sample (``sample_batch``)."""

    def __init__(self, learner_network: torch.nn.Module, loop: TrainerConfig, *, seed: int):
        super().__init__()
        self.loop = loop  # the trainer group: batch size, replay ratio, warm-up, games, ...
        self.learner_network = learner_network
        self.actor_network = copy.deepcopy(learner_network).eval().requires_grad_(False)
        self.rng = np.random.default_rng(seed)
        self.gradient_steps = 0
        self.last_sync = 0
        self.collect_seconds = 0.0
        # Resumed from a checkpoint without replay (a step checkpoint, when last.ckpt was
        # unreadable): play on to this many moves before sampling, as a fresh run's warm-up.
        self.refill_until = 0

    def setup(self, stage: str) -> None:
        """Self-play searches on the learner's device (a GPU when training on one)."""
        trainer = getattr(self, "trainer", None)
        if trainer is not None:
            for network in self.networks_to_place():
                network.to(trainer.strategy.root_device)

    def networks_to_place(self) -> list[torch.nn.Module]:
        return [self.actor_network]

    @property
    def moves_played(self) -> int:
        raise NotImplementedError

    def has_data(self) -> bool:
        raise NotImplementedError

    def collect(self) -> None:
        raise NotImplementedError

    def sample_batch(self) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def update_priorities(self, indices: torch.Tensor, errors: torch.Tensor) -> None:
        """New priorities from the learner (subclasses hold ``self.replay``)."""
        if self.replay.prioritized:
            self.replay.update_priorities(indices.cpu().numpy(), errors.float().cpu().numpy())

    def counters(self, games: int) -> dict[str, float]:
        """The counters every loop logs (``stats`` adds its own)."""
        actor = self.actor
        return {
            "selfplay/moves": float(actor.moves_played),
            "selfplay/games": float(games),
            "selfplay/simulations": float(actor.simulations),
            "replay/size": float(len(self.replay)),
            "selfplay/collect_seconds": self.collect_seconds,
            "selfplay/search_seconds": actor.search_seconds,
            "selfplay/network_calls": float(self.model.network_calls),
        }

    def train_dataloader(self):
        trainer = getattr(self, "trainer", None)
        length = trainer.max_steps if trainer is not None and trainer.max_steps > 0 else 2**62
        return DataLoader(BatchStream(self, length), batch_size=None, num_workers=0)

    def moves_needed(self, gradient_steps: int) -> int:
        return self.loop.warmup_moves + math.ceil(gradient_steps / self.loop.replay_ratio)

    def next_batch(self) -> dict[str, torch.Tensor]:
        self.gradient_steps += 1
        needed = max(self.moves_needed(self.gradient_steps), self.refill_until)
        if self.moves_played < needed or not self.has_data():
            self._sync_weights()
        while self.moves_played < needed or not self.has_data():
            start = time.perf_counter()
            self.collect()
            self.collect_seconds += time.perf_counter() - start
        return self.sample_batch()

    def _sync_weights(self) -> None:
        if self.gradient_steps - self.last_sync >= self.loop.sync_every or self.last_sync == 0:
            self.actor_network.load_state_dict(self.learner_network.state_dict())
            self.last_sync = max(self.gradient_steps, 1)

    def state_dict(self) -> dict:
        return {
            "actor_network": self.actor_network.state_dict(),
            "rng": self.rng.bit_generator.state,
            "gradient_steps": self.gradient_steps,
            "last_sync": self.last_sync,
            "refill_until": self.refill_until,
        }

    def load_state_dict(self, state: dict) -> None:
        self.actor_network.load_state_dict(state["actor_network"])
        self.rng.bit_generator.state = state["rng"]
        self.gradient_steps = int(state["gradient_steps"])
        self.last_sync = int(state["last_sync"])
        self.refill_until = int(state.get("refill_until", 0))

    def restore_replay(self, replay_state: dict | None) -> None:
        """The replay buffer from a checkpoint; a step checkpoint holds none (only last.ckpt
        does), and then self-play refills a warm-up's worth of moves (``refill_until``)."""
        if replay_state is not None:
            self.replay.load_state_dict(replay_state)
        else:
            self.refill_until = self.moves_played + self.loop.warmup_moves


class SelfPlayDataModule(EmbeddedLoop):
    """AlphaZero's loop: the true game as the model, positions as replay items."""

    def __init__(
        self,
        game: BoardGame,
        learner_network: torch.nn.Module,
        search: SearchSettings,
        loop: TrainerConfig,
        replay: ReplayBuffer,
        *,
        seed: int,
        symmetries: BoardSymmetries | None = None,
        search_value_weight: float = 0.0,
    ):
        super().__init__(learner_network, loop, seed=seed)
        self.game, self.search, self.replay = game, search, replay
        self.symmetries = symmetries  # None: samples as played
        self.search_value_weight = search_value_weight  # see alphazero_positions
        if set(replay.data) != set(alphazero_fields(game.obs_shape, game.num_actions)):
            raise ValueError(f"replay fields {sorted(replay.data)} do not fit AlphaZero targets")
        self.model = GameModel(game, self.actor_network)
        self.actor = SelfPlayActor(
            game,
            self.model,
            search,
            num_games=loop.num_games,
            temperature_moves=loop.temperature_moves,
            seed=seed,
            resign_threshold=loop.resign_threshold,
            random_opening_moves=loop.random_opening_moves,
        )
        self.outcomes = np.zeros(3, np.int64)  # first player won, drew, lost (recent games)
        self.game_lengths: list[int] = []

    @property
    def moves_played(self) -> int:
        return self.actor.moves_played

    def has_data(self) -> bool:
        return len(self.replay) > 0

    def sample_batch(self) -> dict[str, torch.Tensor]:
        sample = self.replay.sample(self.loop.batch_size, self.rng)
        fields = sample.fields
        if self.symmetries is not None:
            fields = self.symmetries.augment(fields, self.rng)
        batch = {name: torch.from_numpy(values) for name, values in fields.items()}
        batch["weights"] = torch.from_numpy(sample.weights)
        batch["indices"] = torch.from_numpy(sample.indices)
        return batch

    def collect(self) -> None:
        """One move in every game; finished games go to replay."""
        for trajectory in self.actor.step():
            self.replay.add(alphazero_positions(trajectory, self.search_value_weight))
            first = trajectory.returns[0]
            self.outcomes[0 if first > 0 else 1 if first == 0 else 2] += 1
            self.game_lengths.append(len(trajectory.actions))

    def stats(self) -> dict[str, float]:
        """Counters for logging since the last call (rates) and in total."""
        actor = self.actor
        out = {
            **self.counters(actor.games_finished),
            "selfplay/resignations": float(actor.resignations),
            "selfplay/resigned_wrongly": float(actor.resigned_wrongly),
        }
        if self.outcomes.sum():
            total = self.outcomes.sum()
            out["selfplay/first_player_win"] = self.outcomes[0] / total
            out["selfplay/draw"] = self.outcomes[1] / total
            out["selfplay/game_length"] = float(np.mean(self.game_lengths))
            self.outcomes[:] = 0
            self.game_lengths.clear()
        return out

    def state_dict(self) -> dict:
        return {
            **super().state_dict(),
            "replay": self.replay.state_dict(),
            "actor": self.actor.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.actor.load_state_dict(state["actor"])
        self.restore_replay(state["replay"])
