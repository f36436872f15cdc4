"""``train(cfg)``: build every part from a ``TrainConfig`` and run the embedded loop.

Re-running the same command resumes from the run directory's last checkpoint. A run directory
that holds a different experiment is refused (or cleared with ``overwrite=true``), never
silently mixed.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, TQDMProgressBar
from lightning.pytorch.loggers import TensorBoardLogger

from games import BoardGame
from games.symmetry import GAME_SYMMETRIES, BoardSymmetries, board_symmetries
from mbrl.callbacks import SelfPlayMonitor
from mbrl.checkpoint import (
    LAST,
    METADATA_KEY,
    AtomicCheckpointIO,
    check_compatible,
    load_checkpoint,
    network_weights,
    resumable,
)
from mbrl.checkpoint import resume_point as find_resume_point
from mbrl.config import TrainConfig
from mbrl.graceful_stop import GracefulStop
from mbrl.parts import evaluation_callback, game_parts, self_play_actor
from mbrl.quiet import quiet_third_party
from mbrl.replay.episodes import EpisodeReplay
from mbrl.run_dir import check_run_dir, claim_run_dir
from mbrl.selfplay.data_parallel import (
    FollowerData,
    StopTogether,
    is_follower,
    learner_strategy,
    syncs_batchnorm,
)
from mbrl.selfplay.embedded import SelfPlayDataModule
from mbrl.selfplay.local_actors import LocalActors
from mbrl.selfplay.tree_values import PositionTable
from mbrl.system import System
from mbrl.threads import configure_threads
from mbrl.validation import validate


def symmetries(cfg: TrainConfig, game: BoardGame | None) -> BoardSymmetries | None:
    """The board symmetries to augment samples with (``replay.augment_symmetries``)."""
    if not cfg.replay.augment_symmetries:
        return None
    found = None if game is None else board_symmetries(game.name, game.obs_shape, game.num_actions)
    if found is None:
        raise ValueError(
            f"replay.augment_symmetries=true, but game {cfg.game.name!r} declares no board "
            f"symmetries; games that do: {sorted(GAME_SYMMETRIES)}"
        )
    return found


def build(cfg: TrainConfig, run_dir: Path):
    """``(system, data module, evaluation callback)`` for every game algorithm and backend."""
    embedded = cfg.backend.name == "embedded"
    # The learner steps no games of its own when actors elsewhere play them.
    parts = game_parts(cfg, seed=cfg.seed, batch_size=None if embedded else 1)
    if cfg.init_from:  # before the actors copy the network (a resume's checkpoint replaces it)
        start_from(parts.network, cfg.init_from, parts.environment.spec)
    system = _system(cfg, parts)
    if cfg.algo.name == "supervised":
        from mbrl.supervised import LabelData  # python-chess: for chess runs only

        environment = parts.environment
        data = LabelData(cfg.algo.labels, environment.game, cfg.trainer.batch_size, seed=cfg.seed)
    else:
        data = _self_play_data(cfg, parts)
    evaluation = evaluation_callback(cfg, parts)
    if cfg.backend.evaluators:
        from mbrl.distributed import RayEvaluators

        evaluation.evaluate_remotely(RayEvaluators(cfg))
    return system, data, evaluation


def start_from(network, path: str, game_spec: dict) -> None:
    """``init_from``: another run's network weights, for the same game and network."""
    checkpoint = load_checkpoint(path)
    check_compatible(checkpoint[METADATA_KEY], game_spec, f"init_from={path}")
    try:
        network.load_state_dict(network_weights(checkpoint))
    except RuntimeError as error:
        first = str(error).strip().splitlines()[0]
        raise ValueError(
            f"init_from={path} holds another network than model.* describes: {first}"
        ) from None


def _self_play_data(cfg: TrainConfig, parts) -> SelfPlayDataModule:
    environment, network, algo = parts.environment, parts.network, cfg.algo
    replay = EpisodeReplay(
        cfg.replay.capacity,
        environment.obs_shape,
        environment.obs_dtype,
        environment.num_actions,
        parts.targets,
        frame_stack=environment.frame_stack,
        prioritized=cfg.replay.prioritized,
        alpha=cfg.replay.alpha,
        beta=cfg.replay.beta,
    )
    remote_reanalysis = None
    if cfg.backend.name == "embedded":
        actors = LocalActors(*self_play_actor(cfg, parts, seed=cfg.seed))
    else:
        from mbrl.distributed import RayActors, RayReanalyzers  # Ray is an extra

        actors = RayActors(cfg, network)
        if cfg.backend.reanalyzers:
            remote_reanalysis = RayReanalyzers(cfg)
    return SelfPlayDataModule(
        actors,
        network,
        parts.make_model,
        cfg.search,
        cfg.trainer,
        algo,
        replay,
        seed=cfg.seed,
        two_player=environment.two_player,
        symmetries=symmetries(cfg, environment.game),
        outcome_targets=parts.outcome_targets,
        remote_reanalysis=remote_reanalysis,
        positions=(
            PositionTable(
                cfg.replay.capacity,
                environment.obs_shape,
                lambda history: environment.env.game.replay(history)[0],
            )
            if algo.tree_value_weight
            else None
        ),
    )


def _system(cfg: TrainConfig, parts) -> System:
    """The learner's LightningModule, with what eval and play need in its checkpoints."""
    metadata = {
        "game": parts.environment.spec,
        "model": dataclasses.asdict(cfg.model),
        "search": dataclasses.asdict(cfg.search),
        "algo": cfg.algo.name,
        "config": dataclasses.asdict(cfg),
    }
    return System(parts.network, parts.objective, cfg.optim, metadata=metadata)


def build_follower(cfg: TrainConfig) -> tuple[System, FollowerData]:
    """Ranks 1..N-1 of a learner on several devices: the system, fed slices by rank 0."""
    return _system(cfg, game_parts(cfg, seed=cfg.seed, batch_size=1)), FollowerData()


def resume_point(cfg: TrainConfig, checkpoints: Path, say=print) -> Path | None:
    """The checkpoint a re-run continues from: ``last.ckpt``, or where it is unreadable
    (truncated, corrupt) the newest step checkpoint that loads, saying which. Temporary files
    of a killed write are removed first."""
    refill = (
        f" (it holds no replay buffer: self-play refills {cfg.trainer.warmup_moves} moves "
        "before training goes on)"
    )
    return find_resume_point(checkpoints, resume=cfg.resume, say=say, fallback=refill)


def _checkpoint_callback(run_dir: Path, every: int) -> ModelCheckpoint:
    return ModelCheckpoint(
        dirpath=run_dir / "checkpoints",
        filename="step{step:06d}",
        auto_insert_metric_name=False,
        every_n_train_steps=every,
        save_top_k=-1,
        save_last=True,
        # Never last-v1.ckpt: a re-run resumes from last.ckpt (with the replay buffer), so that
        # name must stay, whatever a resume changed (trainer.checkpoint_every alters the state
        # key under which Lightning remembers this callback, and it would version the name).
        enable_version_counter=False,
    )


def train(cfg: TrainConfig, callbacks: Sequence[L.Callback] = ()) -> dict:
    """Train; returns a summary (steps, wall time, last evaluation, the signal that stopped it).
    ``callbacks``: more Lightning callbacks, after the run's own.

    Nothing is written to ``cfg.run_dir`` until every part was built (`mbrl.run_dir`). With
    ``trainer.devices`` > 1 Lightning re-runs the command once per further device; those
    copies only train (`mbrl.selfplay.data_parallel`)."""
    validate(cfg)
    follower = is_follower(cfg.trainer)
    if not follower:
        check_run_dir(cfg)
    quiet_third_party()
    configure_threads(
        torch_threads=cfg.trainer.torch_threads, numba_threads=cfg.trainer.numba_threads
    )
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    run_dir = Path(cfg.run_dir)
    t, stop = cfg.trainer, GracefulStop()
    if follower:
        system, data = build_follower(cfg)
        own = [SelfPlayMonitor(t.log_every), _checkpoint_callback(run_dir, t.checkpoint_every)]
    else:
        system, data, evaluation = build(cfg, run_dir)
        claim_run_dir(cfg)
        evaluation.limit_training_time(t.max_train_minutes)
        evaluation.watch(stop)
        own = [
            SelfPlayMonitor(t.log_every),
            evaluation,
            _checkpoint_callback(run_dir, t.checkpoint_every),
        ]
    callbacks = [*own, stop, *callbacks]
    if t.devices > 1:
        callbacks.append(StopTogether())  # after every callback that may ask to stop
    if t.progress_bar:
        callbacks.append(TQDMProgressBar(refresh_rate=max(1, t.log_every)))
    trainer = _trainer(cfg, run_dir, callbacks, grad_clip=system.optim.grad_clip)
    last = run_dir / "checkpoints" / LAST
    if follower:  # the checkpoint rank 0 chose (it removed any temporaries before starting us)
        resume = resumable(last.parent)[0] if cfg.resume else None
    else:
        resume = resume_point(cfg, last.parent, say=_say)
    with warnings.catch_warnings():  # resuming into our own checkpoint directory is the point
        warnings.filterwarnings("ignore", message="Checkpoint directory .* exists and is not empty")
        # The stream reports a length only to stop Lightning's prefetch (see embedded.py).
        warnings.filterwarnings("ignore", message="Your `IterableDataset` has `__len__` defined")
        # The data module resumes through its own state_dict (replay, actor, RNG, counters).
        warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended")
        # A changed trainer.checkpoint_every renames the checkpoint callback's state; it starts
        # afresh, by design (last.ckpt keeps its name: _checkpoint_callback).
        warnings.filterwarnings("ignore", message="Be aware that when using `ckpt_path`")
        trainer.fit(system, datamodule=data, ckpt_path=resume, weights_only=True)
    trainer.save_checkpoint(last, weights_only=False)  # everything, replay included
    if follower:
        return {"run_dir": str(run_dir), "steps": trainer.global_step, "rank": trainer.global_rank}
    return {
        "run_dir": str(run_dir),
        "steps": trainer.global_step,
        "train_seconds": evaluation.train_seconds,
        "perfect_at": evaluation.perfect_at,
        "resumed_from": None if resume is None else str(resume),
        "interrupted": stop.signal_name,
        "selfplay": data.stats(),  # counters and time split of the whole run
    }


def _trainer(cfg: TrainConfig, run_dir: Path, callbacks, grad_clip: float) -> L.Trainer:
    t = cfg.trainer
    logger = TensorBoardLogger(run_dir, name="tb", version="") if cfg.logger.tensorboard else False
    return L.Trainer(
        max_steps=t.max_steps,
        max_time=datetime.timedelta(minutes=t.max_minutes) if t.max_minutes > 0 else None,
        accelerator=t.accelerator,
        devices=t.devices,
        strategy=learner_strategy(t),
        sync_batchnorm=syncs_batchnorm(t),
        logger=logger,
        callbacks=callbacks,
        plugins=[AtomicCheckpointIO()],
        gradient_clip_val=grad_clip or None,
        log_every_n_steps=max(1, t.log_every),
        enable_progress_bar=t.progress_bar,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        deterministic=False,
    )


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
