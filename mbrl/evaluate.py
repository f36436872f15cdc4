"""``evaluate(cfg)``: a checkpoint against fixed opponents and other checkpoints, both seats."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from games.opponents import make_opponent
from mbrl.evaluation import play_match
from mbrl.loading import load_agent


@dataclass
class EvalCommandConfig:
    checkpoint: str = "???"  # a .ckpt file or a run directory
    opponents: list[str] = field(default_factory=lambda: ["random", "lookahead", "mcts:100"])
    games: int = 100  # per opponent, half in each seat
    simulations: int = (
        -1
    )  # search simulations per move; -1 = the checkpoint's eval setting; 0 = raw policy
    seed: int = 0
    opening_plies: int = 0  # random plies before play (each opening played from both seats);
    # use 2 or more against checkpoint:<path>, since two deterministic agents repeat one game
    output: str = ""  # JSON file for the results; default <checkpoint's run dir>/eval_results.json


def _opponent(spec: str, loaded, simulations: int | None):
    if spec.startswith("checkpoint:"):
        path = spec.removeprefix("checkpoint:")
        other = load_agent(path, game=loaded.game)
        return other.agent(simulations, name=f"checkpoint:{Path(path).name}")
    return make_opponent(spec, loaded.game.game)


def evaluate(cfg: EvalCommandConfig) -> dict:
    loaded = load_agent(cfg.checkpoint)
    config = loaded.metadata["config"]
    simulations = config["search"]["eval_simulations"] if cfg.simulations < 0 else cfg.simulations
    agent = loaded.agent(simulations)
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
    Console().print(table)
    report = {
        "opening_plies": cfg.opening_plies,
        "checkpoint": str(cfg.checkpoint),
        "game": loaded.game.spec,
        "simulations": simulations,
        "results": results,
    }
    output = Path(cfg.output) if cfg.output else _run_dir(loaded.path) / "eval_results.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1))
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
