"""Chess with the 1,968 move tokens, end to end: Stockfish's labels, the supervised stage, an
optional search-distillation stage, and what each adds against Stockfish and with search.

    python -m benchmarks.chess --positions 100000 --sl-minutes 30
    python -m benchmarks.chess --positions 100000 --sl-minutes 30 --rl-minutes 20 --games 40

Every stage is resumable (labels are reused, runs resume), so re-running goes on where it
stopped. The table: each stage's network, as its raw policy (argmax over legal moves) and with
a Gumbel search of ``--simulations``, against Stockfish at ``--stockfish`` and against random;
then the search against the raw policy head to head, as an Elo difference with its 95% interval.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.learning_runs import compose_train
from games.chess_labels import main as make_labels
from games.opponents import make_opponent
from mbrl.evaluation.elo import elo_interval
from mbrl.evaluation.match import play_match
from mbrl.loading import load_agent
from mbrl.train import train


def stage_table(run_dir: Path, args) -> list[str]:
    loaded = load_agent(run_dir)
    raw = loaded.agent(num_simulations=0, name="raw")
    searched = loaded.agent(num_simulations=args.simulations, name="search")
    rows = []
    for spec in (f"stockfish:{args.stockfish}", "random"):
        opponent = make_opponent(spec, None)
        for agent in (raw, searched):
            result = play_match(loaded.game, agent, opponent, args.games, seed=1)
            rows.append(
                f"{run_dir.name:>10} {agent.name:>7} {spec:>22} "
                f"{result.wins:>4}/{result.draws}/{result.losses:<4} {result.score:>6.3f}"
            )
        getattr(opponent, "close", lambda: None)()
    duel = play_match(loaded.game, searched, raw, args.games, seed=2, opening_plies=4)
    elo, low, high = elo_interval(duel.wins, duel.draws, duel.losses)
    rows.append(
        f"{run_dir.name:>10} search vs raw over {duel.games} games: {duel.wins}/{duel.draws}/"
        f"{duel.losses}, Elo {elo:+.0f} [{low:+.0f}, {high:+.0f}]"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--positions", type=int, default=100000)
    parser.add_argument("--nodes", type=int, default=2000, help="Stockfish nodes per label")
    parser.add_argument("--sl-minutes", type=float, default=30.0)
    parser.add_argument("--rl-minutes", type=float, default=0.0)
    parser.add_argument("--games", type=int, default=40, help="per opponent, both seats")
    parser.add_argument("--simulations", type=int, default=128)
    parser.add_argument("--stockfish", default="1350/50ms", help="<elo>[/<N>ms|/<N>n]")
    parser.add_argument("--dir", type=Path, default=Path("runs/bench_chess"))
    args, overrides = parser.parse_known_args()
    labels = args.dir / "labels.npz"
    make_labels(
        ["--positions", str(args.positions), "--nodes", str(args.nodes), "--out", str(labels)]
    )
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
        for row in stage_table(stage, args):
            print(row)


if __name__ == "__main__":
    main()
