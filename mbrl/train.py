"""``train(cfg)``: build every part from a ``TrainConfig`` and run the embedded loop.

Re-running the same command resumes from the run directory's last checkpoint. A run directory
that holds a different experiment is refused (or cleared with ``overwrite=true``), never
silently mixed.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import shutil
import warnings
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, TQDMProgressBar
from lightning.pytorch.loggers import TensorBoardLogger

from games import BoardGame
from games.symmetry import GAME_SYMMETRIES, BoardSymmetries, board_symmetries
from mbrl.agent import LatentSearchAgent
from mbrl.callbacks import EpisodeEvaluationCallback, EvaluationCallback, SelfPlayMonitor
from mbrl.checkpoint import AtomicCheckpointIO
from mbrl.config import (
    ALGORITHMS,
    GAME_KINDS,
    GUMBEL_ALGORITHMS,
    LATENT_ALGORITHMS,
    LM_ALGORITHMS,
    RESUMABLE_CHANGES,
    TrainConfig,
)
from mbrl.environments import build_latent_network, make_environment
from mbrl.networks import AlphaZeroNet
from mbrl.objectives import AlphaZeroObjective, MuZeroObjective
from mbrl.replay import ReplayBuffer
from mbrl.replay.episodes import EpisodeReplay, UnrollSettings
from mbrl.replay.targets import alphazero_fields
from mbrl.selfplay.embedded import LoopSettings, SelfPlayDataModule
from mbrl.selfplay.latent_loop import LatentSelfPlayDataModule, LatentSettings
from mbrl.selfplay.planner import SearchSettings
from mbrl.system import OptimSettings, System

EXPERIMENT_FILE = "experiment.json"


def search_settings(cfg: TrainConfig) -> SearchSettings:
    fields = {f.name for f in dataclasses.fields(SearchSettings)}
    return SearchSettings(
        **{k: v for k, v in dataclasses.asdict(cfg.search).items() if k in fields}
    )


def build_network(game: BoardGame, model_cfg) -> AlphaZeroNet:
    return AlphaZeroNet(
        game.obs_shape,
        game.num_actions,
        channels=model_cfg.channels,
        blocks=model_cfg.blocks,
        value_hidden=model_cfg.value_hidden,
    )


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key != "params":
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _identity(cfg: TrainConfig) -> dict:
    """The settings that define an experiment (everything a resume may not change)."""
    flat = _flatten(dataclasses.asdict(cfg))
    return {
        k: v
        for k, v in flat.items()
        if not any(k == c or k.startswith(f"{c}.") for c in RESUMABLE_CHANGES)
    }


def claim_run_dir(cfg: TrainConfig) -> Path:
    """Create or re-enter ``cfg.run_dir``; refuse one that holds another experiment."""
    run_dir = Path(cfg.run_dir)
    marker = run_dir / EXPERIMENT_FILE
    identity = _identity(cfg)
    if marker.exists() and not cfg.overwrite:
        saved = json.loads(marker.read_text())
        # A key added to the config after the run was made reads as its default there.
        defaults = _identity(TrainConfig())
        for key in identity.keys() - saved.keys():
            if key in defaults:
                saved[key] = defaults[key]
        changed = sorted(
            k for k in saved.keys() | identity.keys() if saved.get(k) != identity.get(k)
        )
        if changed:
            details = ", ".join(f"{k}: {saved.get(k)!r} -> {identity.get(k)!r}" for k in changed)
            raise ValueError(
                f"run directory {run_dir} holds another experiment ({details}). Choose another "
                f"run_dir=..., or pass overwrite=true to delete it and start afresh."
            )
    if cfg.overwrite:
        for child in (
            "checkpoints",
            "tb",
            "eval.jsonl",
            "eval_results.json",
            "rounds.jsonl",
            EXPERIMENT_FILE,
        ):
            path = run_dir / child
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(identity, indent=1, sort_keys=True))
    return run_dir


def validate(cfg: TrainConfig) -> None:
    if cfg.algo.name not in ALGORITHMS:
        raise ValueError(f"algo.name must be one of {ALGORITHMS}, got {cfg.algo.name!r}")
    if cfg.game.kind not in GAME_KINDS:
        raise ValueError(f"game.kind must be one of {GAME_KINDS}, got {cfg.game.kind!r}")
    if (cfg.game.kind == "text") != (cfg.algo.name in LM_ALGORITHMS):
        raise ValueError(
            f"algo={cfg.algo.name} does not train on game.kind={cfg.game.kind}: language-model "
            f"tasks (game.kind=text) take algo={' | '.join(LM_ALGORITHMS)}, and those train "
            "only on text tasks"
        )
    for key in ("max_minutes", "max_train_minutes"):
        if not getattr(cfg.trainer, key) >= 0:
            raise ValueError(
                f"trainer.{key} must be >= 0 (0 = no limit), got {getattr(cfg.trainer, key)}"
            )
    if not 0.0 <= cfg.algo.search_value_weight <= 1.0:
        raise ValueError(
            "algo.search_value_weight must be in [0, 1] (0 = the game outcome only), got "
            f"{cfg.algo.search_value_weight}"
        )
    if cfg.game.kind == "text":
        return
    expected = "gumbel" if cfg.algo.name in GUMBEL_ALGORITHMS else "puct"
    if cfg.search.policy != expected:
        raise ValueError(
            f"algo {cfg.algo.name} searches with search.policy={expected}, got "
            f"{cfg.search.policy!r}"
        )
    if cfg.game.kind != "openspiel" and cfg.algo.name not in LATENT_ALGORITHMS:
        raise ValueError(
            f"game.kind={cfg.game.kind} has no simulator for the search to plan with; use a "
            f"learned-model algorithm: algo={' | '.join(LATENT_ALGORITHMS)}"
        )


def loop_settings(cfg: TrainConfig) -> LoopSettings:
    t = cfg.trainer
    return LoopSettings(
        batch_size=t.batch_size,
        replay_ratio=t.replay_ratio,
        warmup_moves=t.warmup_moves,
        sync_every=t.sync_every,
        num_games=t.num_games,
        temperature_moves=t.temperature_moves,
        resign_threshold=t.resign_threshold,
        random_opening_moves=t.random_opening_moves,
    )


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


def build_alphazero(cfg: TrainConfig, run_dir: Path):
    """``(system, data module, evaluation callback)`` for AlphaZero and Gumbel AlphaZero."""
    game = BoardGame(cfg.game.name, cfg.game.params, max_moves=cfg.game.max_moves)
    network = build_network(game, cfg.model)
    settings = search_settings(cfg)
    metadata = {
        "game": game.spec,
        "model": dataclasses.asdict(cfg.model),
        "search": dataclasses.asdict(settings),
        "algo": cfg.algo.name,
        "config": dataclasses.asdict(cfg),
    }
    optim = OptimSettings(**dataclasses.asdict(cfg.optim))
    system = System(network, AlphaZeroObjective(), optim, metadata=metadata)
    replay = ReplayBuffer(
        cfg.replay.capacity,
        alphazero_fields(game.obs_shape, game.num_actions),
        prioritized=cfg.replay.prioritized,
        alpha=cfg.replay.alpha,
        beta=cfg.replay.beta,
    )
    data = SelfPlayDataModule(
        game,
        network,
        settings,
        loop_settings(cfg),
        replay,
        seed=cfg.seed,
        symmetries=symmetries(cfg, game),
        search_value_weight=cfg.algo.search_value_weight,
    )
    evaluation = EvaluationCallback(game, settings, **_board_eval_args(cfg, run_dir))
    return system, data, evaluation


def _board_eval_args(cfg: TrainConfig, run_dir: Path) -> dict:
    return dict(
        every=cfg.eval.every,
        games=cfg.eval.games,
        opponents=list(cfg.eval.opponents),
        simulations=cfg.eval.simulations,
        elo_pool=cfg.eval.elo_pool,
        elo_games=cfg.eval.elo_games,
        optimality=cfg.eval.optimality,
        stop_when_perfect=cfg.eval.stop_when_perfect,
        run_dir=run_dir,
        seed=cfg.seed,
    )


def build_latent(cfg: TrainConfig, run_dir: Path):
    """``(system, data module, evaluation callback)`` for MuZero, Gumbel MuZero, EfficientZero."""
    environment = make_environment(cfg.game, cfg.trainer.num_games, seed=cfg.seed)
    algo = cfg.algo
    network = build_latent_network(environment.obs_shape, environment.num_actions, cfg)
    settings = search_settings(cfg)
    metadata = {
        "game": environment.spec,
        "model": dataclasses.asdict(cfg.model),
        "search": dataclasses.asdict(settings),
        "algo": algo.name,
        "config": dataclasses.asdict(cfg),
    }
    objective = MuZeroObjective(
        unroll_steps=algo.unroll_steps,
        policy_weight=algo.policy_weight,
        value_weight=algo.value_weight,
        reward_weight=algo.reward_weight,
        consistency_weight=algo.consistency_weight,
        value_prefix_horizon=algo.value_prefix_horizon,
    )
    optim = OptimSettings(**dataclasses.asdict(cfg.optim))
    system = System(network, objective, optim, metadata=metadata)
    replay = EpisodeReplay(
        cfg.replay.capacity,
        environment.obs_shape,
        environment.obs_dtype,
        environment.num_actions,
        UnrollSettings(
            unroll_steps=algo.unroll_steps,
            td_steps=algo.td_steps,
            discount=algo.discount,
            frame_stack=environment.frame_stack,
            dynamic_td_every=algo.dynamic_td_every,
        ),
        prioritized=cfg.replay.prioritized,
        alpha=cfg.replay.alpha,
        beta=cfg.replay.beta,
    )
    latent = LatentSettings(
        discount=algo.discount,
        target_update_every=algo.target_update_every,
        reanalyze_value=algo.reanalyze_value,
        reanalyze_policy=algo.reanalyze_policy,
        value_prefix_horizon=algo.value_prefix_horizon,
        consistency=algo.consistency_weight > 0,
        segment_length=algo.segment_length,
        temperature_schedule=tuple(tuple(pair) for pair in algo.temperature_schedule),
    )
    data = LatentSelfPlayDataModule(
        environment.env,
        network,
        settings,
        loop_settings(cfg),
        latent,
        replay,
        seed=cfg.seed,
        two_player=environment.two_player,
        symmetries=symmetries(cfg, environment.game),
    )

    def make_agent(net, simulations: int, name: str) -> LatentSearchAgent:
        return LatentSearchAgent(
            net,
            settings,
            discount=algo.discount,
            two_player=environment.two_player,
            value_prefix_horizon=algo.value_prefix_horizon,
            game=environment.game,
            num_simulations=simulations,
            name=name,
        )

    if environment.game is not None:  # a board game: matches against opponents, Elo
        args = _board_eval_args(cfg, run_dir)
        evaluation = EvaluationCallback(environment.game, settings, **args, make_agent=make_agent)
    else:
        evaluation = EpisodeEvaluationCallback(
            lambda: (
                make_environment(
                    cfg.game, min(cfg.eval.games, 16), seed=cfg.seed + 1, training=False
                ).env
            ),
            make_agent,
            every=cfg.eval.every,
            episodes=cfg.eval.games,
            simulations=cfg.eval.simulations,
            run_dir=run_dir,
            seed=cfg.seed,
            target_return=cfg.eval.target_return,
            normalize=_human_normalizer(environment.spec),
        )
    return system, data, evaluation


def _human_normalizer(spec: dict):
    """Atari games with reference scores: raw return -> human-normalized score."""
    if spec.get("kind") != "atari":
        return None
    from mbrl.evaluation.atari_scores import REFERENCE_SCORES, human_normalized

    if spec["name"] not in REFERENCE_SCORES:
        return None
    return lambda score: human_normalized(spec["name"], score)


def train(cfg: TrainConfig) -> dict:
    """Train; returns a summary (steps, wall time, last evaluation)."""
    validate(cfg)
    run_dir = claim_run_dir(cfg)
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    build = build_latent if cfg.algo.name in LATENT_ALGORITHMS else build_alphazero
    system, data, evaluation = build(cfg, run_dir)
    optim, t = system.optim, cfg.trainer
    evaluation.limit_training_time(t.max_train_minutes)
    checkpoints = ModelCheckpoint(
        dirpath=run_dir / "checkpoints",
        filename="step{step:06d}",
        auto_insert_metric_name=False,
        every_n_train_steps=t.checkpoint_every,
        save_top_k=-1,
        save_last=True,
    )
    callbacks = [SelfPlayMonitor(t.log_every), evaluation, checkpoints]
    if t.progress_bar:
        callbacks.append(TQDMProgressBar(refresh_rate=max(1, t.log_every)))
    logger = TensorBoardLogger(run_dir, name="tb", version="") if cfg.logger.tensorboard else False
    trainer = L.Trainer(
        max_steps=t.max_steps,
        max_time=datetime.timedelta(minutes=t.max_minutes) if t.max_minutes > 0 else None,
        accelerator=t.accelerator,
        devices=1,
        logger=logger,
        callbacks=callbacks,
        plugins=[AtomicCheckpointIO()],
        gradient_clip_val=optim.grad_clip or None,
        log_every_n_steps=max(1, t.log_every),
        enable_progress_bar=t.progress_bar,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        deterministic=False,
    )
    last = run_dir / "checkpoints" / "last.ckpt"
    resume = str(last) if cfg.resume and last.exists() else None
    with warnings.catch_warnings():  # resuming into our own checkpoint directory is the point
        warnings.filterwarnings("ignore", message="Checkpoint directory .* exists and is not empty")
        # The stream reports a length only to stop Lightning's prefetch (see embedded.py).
        warnings.filterwarnings("ignore", message="Your `IterableDataset` has `__len__` defined")
        # The data module resumes through its own state_dict (replay, actor, RNG, counters).
        warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended")
        trainer.fit(system, datamodule=data, ckpt_path=resume)
    trainer.save_checkpoint(last)
    return {
        "run_dir": str(run_dir),
        "steps": trainer.global_step,
        "train_seconds": evaluation.train_seconds,
        "perfect_at": evaluation.perfect_at,
        "resumed_from": resume,
        "selfplay": data.stats(),  # counters and time split of the whole run
    }
