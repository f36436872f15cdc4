"""Chess with the 1,968 move tokens, end to end: Stockfish's labels, the supervised stage, an
optional search-distillation stage, and what each adds against Stockfish and with search.

    python -m benchmarks.chess --positions 100000 --sl-minutes 30
    python -m benchmarks.chess --positions 100000 --sl-minutes 30 --rl-minutes 20 --games 40
    python -m benchmarks.chess --positions 300000 --sl-minutes 45 --games 20 --duel-games 200 \
        model.channels=96 trainer.max_steps=2400 optim.total_steps=2400 optim.warmup_steps=200

Every stage is resumable (labels are reused, runs resume), so re-running goes on where it
stopped. The table: each stage's network, as its raw policy (argmax over legal moves) and with
a Gumbel search of ``--simulations``, against a ladder of Stockfish levels (``--ladder``, each
giving an Elo estimate with its 95% interval) and against random; the search against the raw
policy head to head (``--duel-games``, from random 4-ply openings), as an Elo difference
with its interval; and the share of mate-in-1..3 puzzles (`games.chess_puzzles`, from the
label positions) each solves.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import chess.engine

from benchmarks.learning_runs import compose_train, eval_history
from games.chess_labels import main as make_labels
from games.chess_puzzles import PuzzleJudge, accuracy, load_puzzles
from games.chess_puzzles import main as make_puzzles
from games.opponents import make_opponent
from games.stockfish import find_stockfish
from mbrl.evaluation.elo import elo_interval
from mbrl.evaluation.match import play_match
from mbrl.loading import load_agent
from mbrl.train import train


def stage_table(run_dir: Path, args, puzzles) -> list[str]:
    loaded = load_agent(run_dir)
    raw = loaded.agent(num_simulations=0, name="raw")
    searched = loaded.agent(num_simulations=args.simulations, name="search")
    rows = []
    for spec in [*(f"stockfish:{level}/{args.movetime}" for level in args.ladder), "random"]:
        opponent = make_opponent(spec, None)
        for agent in (raw, searched):
            result = play_match(loaded.game, agent, opponent, args.games, seed=1)
            line = (
                f"{run_dir.name:>10} {agent.name:>7} {spec:>22} "
                f"{result.wins:>4}/{result.draws}/{result.losses:<4} {result.score:>6.3f}"
            )
            if spec.startswith("stockfish:"):  # the agent's Elo, from this rung of the ladder
                elo, low, high = elo_interval(result.wins, result.draws, result.losses)
                rung = int(spec.split(":")[1].split("/")[0])
                line += f"  Elo {rung + elo:.0f} [{rung + low:.0f}, {rung + high:.0f}]"
            rows.append(line)
        getattr(opponent, "close", lambda: None)()
    duel = play_match(loaded.game, searched, raw, args.duel_games, seed=2, opening_plies=4)
    elo, low, high = elo_interval(duel.wins, duel.draws, duel.losses)
    rows.append(
        f"{run_dir.name:>10} search vs raw over {duel.games} games: {duel.wins}/{duel.draws}/"
        f"{duel.losses}, Elo {elo:+.0f} [{low:+.0f}, {high:+.0f}]"
    )
    history = eval_history(run_dir)
    if history and "held_out" in history[-1]:  # the supervised stage's last evaluation
        last = history[-1]
        held_out = ", ".join(f"{k} {v:.3f}" for k, v in last["held_out"].items())
        rows.append(f"{run_dir.name:>10} held-out labels at step {last['step']}: {held_out}")
    if puzzles is not None and len(puzzles["fen"]):
        engine = chess.engine.SimpleEngine.popen_uci(find_stockfish())
        try:
            judge = PuzzleJudge(engine)
            for agent in (raw, searched):
                share = accuracy(
                    lambda fens, a=agent: _choose(a, loaded.game, fens), puzzles, judge
                )
                rows.append(
                    f"{run_dir.name:>10} {agent.name:>7} solves {share:.3f} of "
                    f"{len(puzzles['fen'])} mate-in-1..3 puzzles"
                )
        finally:
            engine.quit()
    return rows


def _choose(agent, game, fens: list[str]) -> list[int]:
    return [int(agent.choose([game.new_state(fen)])[0]) for fen in fens]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--positions", type=int, default=100000)
    parser.add_argument("--nodes", type=int, default=2000, help="Stockfish nodes per label")
    parser.add_argument("--sl-minutes", type=float, default=30.0)
    parser.add_argument("--rl-minutes", type=float, default=0.0)
    parser.add_argument("--games", type=int, default=40, help="per opponent, both seats")
    parser.add_argument(
        "--duel-games", type=int, default=200, help="search against the raw policy, both seats"
    )
    parser.add_argument("--simulations", type=int, default=128)
    parser.add_argument(
        "--ladder",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[1350, 1500],
        help="Stockfish Elo levels to play (comma-separated)",
    )
    parser.add_argument("--movetime", default="50ms", help="Stockfish's limit: <N>ms or <N>n")
    parser.add_argument("--puzzle-positions", type=int, default=5000)
    parser.add_argument("--dir", type=Path, default=Path("runs/bench_chess"))
    args, overrides = parser.parse_known_args(argv)
    labels = args.dir / "labels.npz"
    make_labels(
        ["--positions", str(args.positions), "--nodes", str(args.nodes), "--out", str(labels)]
    )
    puzzle_file = args.dir / "puzzles.npz"
    make_puzzles(
        ["--labels", str(labels), "--out", str(puzzle_file), "--limit", str(args.puzzle_positions)]
    )
    puzzles = load_puzzles(puzzle_file)
    stages = [args.dir / "supervised"]
    train(
        compose_train(
            "experiment=chess_supervised",
            f"algo.labels={labels}",
            f"run_dir={stages[0]}",
            f"trainer.max_train_minutes={args.sl_minutes}",
            *overrides,
        )
    )
    if args.rl_minutes > 0:
        stages.append(args.dir / "distilled")
        train(
            compose_train(
                "experiment=chess_distill",
                f"init_from={stages[0]}",
                f"run_dir={stages[1]}",
                f"trainer.max_train_minutes={args.rl_minutes}",
                *overrides,
            )
        )
    header = f"{'stage':>10} {'player':>7} {'opponent':>22} {'W/D/L':>10} {'score':>6}"
    print(header)
    print("-" * len(header))
    for stage in stages:
        for row in stage_table(stage, args, puzzles):
            print(row)


if __name__ == "__main__":
    main()
