"""``evaluate(cfg)``: a checkpoint against fixed opponents and other checkpoints, both seats."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

from games.opponents import OPPONENT_SPECS, make_opponent
from mbrl.atomic_file import check_file_target, write_atomically
from mbrl.evaluation import play_match
from mbrl.evaluation.episodes import acting_in, run_episodes
from mbrl.evaluation.exhaustive import SEAT_LABELS, play_exhaustively
from mbrl.loading import load_agent
from mbrl.threads import configure_threads


@dataclass
class EvalCommandConfig:
    checkpoint: str = "???"  # a .ckpt file or a run directory
    opponents: list[str] = field(default_factory=lambda: ["random", "lookahead", "mcts:100"])
    games: int = 100  # per opponent, half in each seat
    simulations: int = (
        -1
    )  # search simulations per move; -1 = the checkpoint's eval setting; 0 = raw policy
    seed: int = 0
    # Small games (tic-tac-toe): also play every opponent move at every turn in both seats; the
    # "games" are then all the lines, and perfect play loses none (mbrl.evaluation.exhaustive).
    exhaustive: bool = False
    opening_plies: int = 0  # random plies before play (each opening played from both seats);
    # use 2 or more against checkpoint:<path>, since two deterministic agents repeat one game
    output: str = ""  # JSON file for the results; default <checkpoint's run dir>/eval_results.json
    # Single-agent checkpoints (CartPole, Atari) play `games` episodes instead of matches:
    parallel: int = 8  # episodes played in lockstep
    video: str = ""  # Atari: also record one episode to this .mp4 (or .gif)


def _opponent(spec: str, loaded, simulations: int | None):
    if spec.startswith("checkpoint:"):
        path = spec.removeprefix("checkpoint:")
        other = load_agent(path, game=loaded.game)
        return other.agent(simulations, name=f"checkpoint:{Path(path).name}")
    return make_opponent(spec, loaded.game.game)


def check(cfg: EvalCommandConfig) -> None:
    """Refuse settings that cannot describe an evaluation, naming the key as typed."""
    for key, low in (("games", 1), ("parallel", 1), ("opening_plies", 0)):
        if getattr(cfg, key) < low:
            raise ValueError(f"{key} must be >= {low}, got {getattr(cfg, key)}")
    if cfg.video:  # refused now, not after the episodes
        from mbrl.evaluation.video import check_video_path

        check_video_path(cfg.video)


def evaluate(cfg: EvalCommandConfig) -> dict:
    check(cfg)
    configure_threads()
    loaded = load_agent(cfg.checkpoint)
    _report_path(cfg, loaded)  # refused now, not after minutes of games
    simulations = loaded.simulations(cfg.simulations)
    agent = loaded.agent(simulations)
    if loaded.kind == "chance" and loaded.two_player:
        return _write_report(
            cfg, loaded, evaluate_two_player_chance(cfg, loaded, agent, simulations)
        )
    if loaded.game is None:
        return _write_report(cfg, loaded, evaluate_episodes(cfg, loaded, agent, simulations))
    if not cfg.opponents and not cfg.exhaustive:
        raise ValueError(
            f"opponents=[] names no opponent; give one or more of {OPPONENT_SPECS}, or "
            "exhaustive=true"
        )
    opponents = [_opponent(spec, loaded, simulations) for spec in cfg.opponents]
    results = {}
    for index, opponent in enumerate(track(opponents, description="evaluating", transient=True)):
        result = play_match(
            loaded.game,
            agent,
            opponent,
            cfg.games,
            seed=cfg.seed + index,
            opening_plies=cfg.opening_plies,
        )
        results[opponent.name] = result.as_dict()
    table = Table(title=f"{cfg.checkpoint} ({loaded.game.name}, {simulations} simulations/move)")
    table.add_column("opponent", no_wrap=True)
    for column in ("games", "W", "D", "L", "1st W-L", "2nd W-L", "score"):
        table.add_column(column, justify="right", no_wrap=True)
    for name, r in results.items():
        table.add_row(
            name,
            *(str(r[k]) for k in ("games", "wins", "draws", "losses")),
            f"{r['wins_first']}-{r['losses_first']}",
            f"{r['wins_second']}-{r['losses_second']}",
            f"{r['score']:.3f}",
        )
    report = {
        "opening_plies": cfg.opening_plies,
        "checkpoint": str(cfg.checkpoint),
        "game": loaded.game.spec,
        "simulations": simulations,
        "results": results,
    }
    if cfg.exhaustive:
        walked = play_exhaustively(loaded.game, agent)
        report["exhaustive"] = walked.as_dict()
        for seat, label in SEAT_LABELS.items():
            lines = getattr(walked, seat)
            won = f"{lines.wins}-{lines.losses}"
            table.add_row(
                label,
                *map(str, (lines.lines, lines.wins, lines.draws, lines.losses)),
                won if seat == "first" else "",
                won if seat == "second" else "",
                f"{lines.score:.3f}",
            )
    Console().print(table)
    if cfg.exhaustive:
        verdict = "perfect play" if walked.perfect else "not perfect"
        Console().print(
            f"every opponent move at every turn: {walked.losing_lines} lines lost ({verdict})"
        )
    return _write_report(cfg, loaded, report)


def evaluate_episodes(cfg: EvalCommandConfig, loaded, agent, simulations: int) -> dict:
    """Single-agent checkpoints: ``cfg.games`` episodes in the evaluation protocol (Atari: raw
    rewards, no life loss, the 108k-frame cap), their returns, and for Atari the
    human-normalized score and an optional video."""
    spec = loaded.metadata["game"]
    env = loaded.environment(min(cfg.parallel, cfg.games), seed=cfg.seed).env
    returns = run_episodes(env, acting_in(env, agent), cfg.games, seed=cfg.seed)
    report = {
        "checkpoint": str(cfg.checkpoint),
        "game": spec,
        "simulations": simulations,
        "episodes": len(returns),
        "returns": returns.tolist(),
        "return_mean": float(returns.mean()),
        "return_median": float(np.median(returns)),
        "return_std": float(returns.std()),
    }
    table = Table(title=f"{cfg.checkpoint} ({spec['name']}, {simulations} simulations/step)")
    for column in ("episodes", "mean", "median", "std", "min", "max"):
        table.add_column(column, justify="right")
    table.add_row(
        str(len(returns)),
        *(f"{v:.1f}" for v in (returns.mean(), np.median(returns), returns.std())),
        f"{returns.min():.1f}",
        f"{returns.max():.1f}",
    )
    Console().print(table)
    if spec.get("kind") == "atari":
        _atari_extras(cfg, loaded, agent, spec["name"], returns, report)
    return report


def evaluate_two_player_chance(cfg: EvalCommandConfig, loaded, agent, simulations: int) -> dict:
    """Pig: every reachable roll-or-stop choice scored against the exact solution (the share
    that is optimal, and the exact odds against the optimal player). Other two-player games
    with chance (backgammon): ``cfg.games`` games against a uniformly random player, both
    seats."""
    saved = loaded.metadata["config"]["game"]
    if saved["name"] == "pig":
        from mbrl.evaluation.pig_optimality import PigOptimality

        scores = PigOptimality(dict(saved["params"]), seed=cfg.seed).measure(agent)
    else:
        from mbrl.evaluation.chance_match import RandomOpponentMatch

        match = RandomOpponentMatch(
            saved["name"],
            dict(saved["params"]),
            games=cfg.games,
            max_moves=saved["max_moves"],
            seed=cfg.seed,
        )
        scores = match.measure(agent)
    table = Table(title=f"{cfg.checkpoint} ({saved['name']}, {simulations} simulations/move)")
    for name in scores:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_row(*(f"{value:.3f}" for value in scores.values()))
    Console().print(table)
    return {
        "checkpoint": str(cfg.checkpoint),
        "game": loaded.metadata["game"],
        "simulations": simulations,
        **scores,
    }


def _atari_extras(cfg, loaded, agent, game: str, returns: np.ndarray, report: dict) -> None:
    from mbrl.evaluation.atari_scores import REFERENCE_SCORES, aggregate, human_normalized
    from mbrl.evaluation.video import record_episode, write_video

    if game in REFERENCE_SCORES:
        normalized = [human_normalized(game, r) for r in returns]
        report["human_normalized"] = normalized
        summary = aggregate({game: normalized}, seed=cfg.seed)
        report["human_normalized_mean"] = summary["mean"].point
        Console().print(f"human-normalized score: {summary['mean'].point:.3f} (mean over episodes)")
    if cfg.video:
        env = loaded.environment(1, seed=cfg.seed).env
        frames, total = record_episode(env, agent.act, seed=cfg.seed, max_steps=27_000)
        path = write_video(frames, cfg.video)
        report["video"] = {"path": str(path), "return": float(total), "frames": len(frames)}
        Console().print(f"video of one episode (return {total:.1f}) written to {path}")


def _report_path(cfg: EvalCommandConfig, loaded) -> Path:
    """Where the results go, after refusing a path that cannot take a file."""
    output = Path(cfg.output) if cfg.output else _run_dir(loaded.path) / "eval_results.json"
    return check_file_target(output, f"output={output}", "; name a .json file in it")


def _write_report(cfg: EvalCommandConfig, loaded, report: dict) -> dict:
    output = _report_path(cfg, loaded)
    write_atomically(output, lambda path: Path(path).write_text(json.dumps(report, indent=1)))
    Console().print(f"results written to {output}")
    return report


def _run_dir(path: Path) -> Path:
    return (
        path
        if path.is_dir()
        else path.parent.parent
        if path.parent.name == "checkpoints"
        else path.parent
    )
