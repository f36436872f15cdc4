"""The parts of a game run, built from its config: the one place that knows how, shared by the
learner (``mbrl.train``) and the remote actors, reanalyze workers and evaluators
(``mbrl.distributed``), so that a role on another machine does exactly what it would in the
learner's process.

AlphaZero and Gumbel AlphaZero search the true game (``GameModel``) and learn the K = 0 unroll
whose value is the game's outcome (n covers the whole game, discount 1: a game cut off by the
move limit is a draw); the learned-model algorithms search their network's model (``LatentModel``)
and learn K-step unrolls.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

from mbrl.agent import SearchAgent
from mbrl.callbacks import EpisodeEvaluationCallback, EvaluationCallback
from mbrl.config import LATENT_ALGORITHMS, AlgoConfig, TrainConfig
from mbrl.environments import Environment, build_latent_network, make_environment
from mbrl.networks.board import board_network
from mbrl.objectives import AlphaZeroObjective, MuZeroObjective, StochasticMuZeroObjective
from mbrl.selfplay.actor import SelfPlayActor
from mbrl.selfplay.game_model import GameModel
from mbrl.selfplay.latent_model import LatentModel
from mbrl.selfplay.stochastic_latent_model import StochasticLatentModel


class GameParts(NamedTuple):
    environment: Environment
    network: torch.nn.Module  # freshly initialised (torch's RNG)
    make_model: Callable  # network -> the search's model (GameModel or LatentModel)
    targets: AlgoConfig  # what the replay computes targets with (K, n, discount)
    outcome_targets: bool  # AlphaZero's: the game's outcome (mixed with the search's Q)
    objective: Callable  # (network, batch) -> LossOutput: what the learner minimises


def search_model(algo: AlgoConfig, network, *, two_player: bool, game=None, chance_game=None):
    """What ``algo``'s search plans in around ``network``: the one place that knows it, for
    self-play (`game_parts`) and for a loaded checkpoint (`mbrl.loading`). ``game`` is the board
    game (AlphaZero), ``chance_game`` the simulator of a game with chance (the true-chance
    AlphaZero)."""
    if algo.name == "chance_alphazero":
        from mbrl.selfplay.chance_game_model import ChanceGameModel

        return ChanceGameModel(chance_game, network, discount=algo.discount)
    if algo.name == "stochastic_muzero":
        return StochasticLatentModel(network, discount=algo.discount, two_player=two_player)
    if algo.name in LATENT_ALGORITHMS:
        return LatentModel(
            network,
            discount=algo.discount,
            two_player=two_player,
            value_prefix_horizon=algo.value_prefix_horizon,
        )
    return GameModel(game, network)


def game_parts(cfg: TrainConfig, *, seed: int, batch_size: int | None = None) -> GameParts:
    """The parts, with ``batch_size`` games in the environment (default: the self-play
    actor's ``trainer.num_games``)."""
    batch_size = cfg.trainer.num_games if batch_size is None else batch_size
    environment = make_environment(cfg.game, batch_size, seed=seed)
    algo, game = cfg.algo, environment.game
    two_player = environment.two_player

    def make_model(net):
        chance_game = environment.env.game if algo.name == "chance_alphazero" else None
        return search_model(algo, net, two_player=two_player, game=game, chance_game=chance_game)

    if algo.name == "chance_alphazero":  # the true game and its dice; f(h(obs)) only
        network = build_latent_network(environment.obs_shape, environment.num_actions, cfg)
        targets = dataclasses.replace(algo, unroll_steps=0)
        return GameParts(environment, network, make_model, targets, False, MuZeroObjective(targets))
    if algo.name == "stochastic_muzero":
        network = build_latent_network(environment.obs_shape, environment.num_actions, cfg)
        objective = StochasticMuZeroObjective(algo, two_player=two_player)
        return GameParts(environment, network, make_model, algo, False, objective)
    if algo.name in LATENT_ALGORITHMS:
        network = build_latent_network(environment.obs_shape, environment.num_actions, cfg)
        return GameParts(environment, network, make_model, algo, False, MuZeroObjective(algo))

    targets = dataclasses.replace(
        algo, unroll_steps=0, td_steps=game.max_moves, discount=1.0, dynamic_td_every=0
    )
    return GameParts(
        environment,
        board_network(game, cfg.model),
        make_model,
        targets,
        outcome_targets=True,
        objective=AlphaZeroObjective(),
    )


def actor_seed(seed: int, index: int) -> int:
    """Actor ``index``'s seed: actor 0 plays the embedded run's games, the others their own."""
    return seed if index == 0 else (seed * 1_000_003 + 7_919 * index) % 2**31


def self_play_actor(cfg: TrainConfig, parts: GameParts, seed: int):
    """``(actor, its network)``: the one self-play actor, searching with its own copy of the
    network (the learner refreshes it)."""
    network = copy.deepcopy(parts.network).eval().requires_grad_(False)
    environment, targets = parts.environment, parts.targets
    obs_shape, frame_stack = environment.obs_shape, environment.frame_stack
    actor = SelfPlayActor(
        environment.env,
        parts.make_model(network),
        cfg.search,
        seed=seed,
        # image observations are recorded as their newest frame (the replay rebuilds stacks)
        frame_channels=obs_shape[0] // frame_stack if len(obs_shape) > 1 else None,
        two_player=environment.two_player,
        temperature_moves=cfg.trainer.temperature_moves,
        segment_length=cfg.algo.segment_length,
        segment_overlap=targets.td_steps + targets.unroll_steps,
        frame_stack=frame_stack,
        random_opening_moves=cfg.trainer.random_opening_moves,
        resign_threshold=cfg.trainer.resign_threshold,
        bootstrap_truncation=not parts.outcome_targets,  # AlphaZero: a cut-off game is a draw
        tree_value_min_visits=cfg.algo.tree_value_min_visits if cfg.algo.tree_value_weight else 0,
    )
    return actor, network


def evaluation_callback(cfg: TrainConfig, parts: GameParts):
    """The run's evaluation: matches against opponents and Elo on board games, the mean return
    elsewhere. The learner runs it as a callback; a Ray evaluator uses its ``measure``."""
    environment, run_dir = parts.environment, Path(cfg.run_dir)

    def make_agent(net, simulations: int, name: str) -> SearchAgent:
        return SearchAgent(
            parts.make_model(net.eval()),
            cfg.search,
            game=environment.game,
            num_simulations=simulations,
            name=name,
        )

    if environment.game is not None:
        held_out = None
        if cfg.algo.name == "supervised":  # the teacher's held-out labels, with the matches
            from mbrl.supervised import HeldOut

            held_out = HeldOut(cfg.algo.labels, environment.game)
        return EvaluationCallback(
            environment.game,
            cfg.search,
            **_board_eval_args(cfg, run_dir),
            make_agent=make_agent,
            held_out=held_out,
        )
    return EpisodeEvaluationCallback(
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
        extra_measures=_extra_measures(cfg),
    )


def _extra_measures(cfg: TrainConfig) -> tuple:
    """Measures beside the return: Pig's exact solution scores every roll-or-stop choice; other
    two-player games with chance (backgammon) are played against a random opponent."""
    if cfg.game.kind != "chance":
        return ()
    if cfg.game.name == "pig":
        from mbrl.evaluation.pig_optimality import PigOptimality

        return (PigOptimality(dict(cfg.game.params), seed=cfg.seed),)
    from mbrl.evaluation.chance_match import RandomOpponentMatch

    try:
        match = RandomOpponentMatch(
            cfg.game.name,
            dict(cfg.game.params),
            games=max(2, cfg.eval.games),
            max_moves=cfg.game.max_moves,
            seed=cfg.seed,
        )
    except ValueError:  # one player (2048): its return is the measure
        return ()
    return (match,)


def _board_eval_args(cfg: TrainConfig, run_dir: Path) -> dict:
    return dict(
        every=cfg.eval.every,
        games=cfg.eval.games,
        opponents=list(cfg.eval.opponents),
        simulations=cfg.eval.simulations,
        elo_pool=cfg.eval.elo_pool,
        elo_games=cfg.eval.elo_games,
        optimality=cfg.eval.optimality,
        exhaustive=cfg.eval.exhaustive,
        stop_when_perfect=cfg.eval.stop_when_perfect,
        run_dir=run_dir,
        seed=cfg.seed,
    )


def _human_normalizer(spec: dict):
    """Atari games with reference scores: raw return -> human-normalized score."""
    if spec.get("kind") != "atari":
        return None
    from mbrl.evaluation.atari_scores import REFERENCE_SCORES, human_normalized

    if spec["name"] not in REFERENCE_SCORES:
        return None
    return lambda score: human_normalized(spec["name"], score)
