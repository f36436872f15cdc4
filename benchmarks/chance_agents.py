"""Agents for games with chance, at equal environment steps: Stochastic MuZero (learned chance
codes), MuZero (a deterministic model of a random game) and the true-chance AlphaZero (the
simulator's dice, exact expectations at chance nodes), on Piglet and 2048.

    python -m benchmarks.chance_agents --game piglet                 # stochastic_muzero, chance_alphazero
    python -m benchmarks.chance_agents --game 2048 --algos muzero --seeds 0 trainer.max_steps=2000

Piglet (configs/experiment/piglet_stochastic.yaml, coin, first to 10) is scored against its exact
solution: the share of the 1,100 reachable roll-or-stop choices that are optimal (always
rolling: 0.356, always stopping: 0.644, the best hold-at-h: 0.858) and the exact probability of
beating the optimal player, seats averaged (0.5 = optimal). MuZero is not run on Piglet: its
model assumes the turn passes at every move, which a coin decides in Pig. For Stochastic MuZero
the learned chance is read back: the encoder's code for each true outcome of every roll, and
the probability of heads that sigma implies through those codes (the truth: 0.5). 2048
(configs/experiment/game2048_stochastic.yaml, ends at the 512 tile) is scored by the mean score
of 16 evaluation games.

Extra arguments are Hydra overrides of the experiment. Every evaluation is appended to
``--out`` (JSONL, one line per evaluation) and the curves drawn to ``--plot``; ``--reuse`` keeps
runs already trained under ``--run-root`` (a finished run is read back, not trained again).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import torch

from benchmarks.learning_runs import compose_train, eval_history
from mbrl.jsonl_log import append_records, read_records
from mbrl.train import train

EXPERIMENTS = {"piglet": "piglet_stochastic", "2048": "game2048_stochastic"}
DEFAULT_ALGOS = {
    "piglet": "stochastic_muzero,chance_alphazero",
    "2048": "stochastic_muzero,muzero,chance_alphazero",
}
METRIC = {"piglet": "optimal_share", "2048": "return_mean"}


def learned_coin(run_dir: str) -> dict[str, float]:
    """What Stochastic MuZero learned of Piglet's coin, from the run's last checkpoint."""
    from games.chance import ChanceGame
    from games.pig_optimal import ROLL, reachable_decision_states
    from mbrl.checkpoint import load_checkpoint, network_weights
    from mbrl.config import ModelConfig
    from mbrl.networks.stochastic_muzero import StochasticMuZeroNet

    checkpoint = load_checkpoint(run_dir)
    meta = checkpoint["mbrl"]
    cfg = meta["config"]
    game = ChanceGame("pig", cfg["game"]["params"])
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    model = ModelConfig(**{k: v for k, v in meta["model"].items() if k in known})
    net = StochasticMuZeroNet(game.obs_shape, game.num_actions, cfg["algo"]["chance_codes"], model)
    net.load_state_dict(network_weights(checkpoint))
    net.eval()
    params = cfg["game"]["params"]
    states = [
        s
        for s in reachable_decision_states(
            params["winscore"], dice_outcomes=params["diceoutcomes"], piglet=params["piglet"]
        )
        if game.legal_mask(s)[ROLL]
    ]
    obs = torch.tensor(np.stack([game.observation(s) for s in states]))
    after = [game.apply_decision(s, ROLL).state for s in states]
    outcomes = [  # tails (the turn total is lost), heads
        torch.tensor(np.stack([game.observation(game.apply_chance(a, face)) for a in after]))
        for face in (0, 1)
    ]
    with torch.no_grad():
        codes = [net.encode_chance(obs, nxt).index.numpy() for nxt in outcomes]
        afterstate = net.afterstate(net.represent(obs), torch.full((len(states),), ROLL))
        sigma = torch.softmax(net.predict_afterstate(afterstate)[0], -1).numpy()
    # P(heads | code) from the codes the encoder gives the true outcomes, then what sigma implies
    num_codes = sigma.shape[1]
    tails_count = np.bincount(codes[0], minlength=num_codes)
    heads_count = np.bincount(codes[1], minlength=num_codes)
    seen = tails_count + heads_count
    p_heads_given_code = np.where(seen > 0, heads_count / np.maximum(seen, 1), 0.5)
    implied_heads = (sigma * p_heads_given_code[None]).sum(1)
    return {
        "outcomes_told_apart": float(np.mean(codes[0] != codes[1])),
        "codes_used": int((seen > 0).sum()),
        "implied_p_heads_mean": float(implied_heads.mean()),
        "implied_p_heads_abs_error": float(np.abs(implied_heads - 0.5).mean()),
    }


def plot(records: list[dict], game: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4))
    for algo in sorted({r["algo"] for r in records}):
        for seed in sorted({r["seed"] for r in records if r["algo"] == algo}):
            rows = [r for r in records if r["algo"] == algo and r["seed"] == seed]
            axis.plot(
                [r["env_steps"] for r in rows],
                [r[METRIC[game]] for r in rows],
                label=f"{algo} seed {seed}",
            )
    if game == "piglet":
        axis.axhline(0.858, color="grey", linestyle=":", label="best hold-at-h (0.858)")
        axis.axhline(0.644, color="grey", linestyle="--", label="always stop (0.644)")
    axis.set_xlabel("environment steps")
    axis.set_ylabel("share of optimal choices" if game == "piglet" else "mean score")
    axis.set_title(f"{game}: agents at equal environment steps")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", choices=sorted(EXPERIMENTS), default="piglet")
    parser.add_argument("--algos", default=None)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--run-root", default="runs/bench_chance")
    parser.add_argument("--out", default=None, help="JSONL (default benchmarks/results/...)")
    parser.add_argument("--plot", default=None)
    parser.add_argument(
        "--reuse", action="store_true", help="keep finished runs in --run-root (no overwrite)"
    )
    args, overrides = parser.parse_known_args(argv)
    game = args.game
    out = Path(args.out or f"benchmarks/results/chance_{game}.jsonl")
    plot_path = Path(args.plot or out.with_suffix(".png"))
    rows = []
    for algo in (args.algos or DEFAULT_ALGOS[game]).split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            run_dir = f"{args.run_root}/{game}_{algo}_seed{seed}"
            cfg = compose_train(
                f"experiment={EXPERIMENTS[game]}",
                f"algo={algo}",
                f"seed={seed}",
                f"run_dir={run_dir}",
                f"overwrite={str(not args.reuse).lower()}",
                "trainer.progress_bar=false",
                *overrides,
            )
            train(cfg)
            history = [
                {"game": game, "algo": algo, "seed": seed, **r} for r in eval_history(run_dir)
            ]
            final = dict(history[-1])
            if game == "piglet" and algo == "stochastic_muzero":
                final.update(learned_coin(run_dir))
                history[-1] = final
            append_records(out, history)
            rows.append(final)
            print(json.dumps(final), flush=True)
    metric = METRIC[game]
    extra = "win_vs_optimal" if game == "piglet" else "return_max"
    print(f"\n{'algorithm':<18} {'seed':>4} {'env steps':>9} {metric:>14} {extra:>14}")
    for r in rows:
        print(
            f"{r['algo']:<18} {r['seed']:>4} {r['env_steps']:>9} {r[metric]:>14.3f} {r[extra]:>14.3f}"
        )
    for r in rows:
        if "implied_p_heads_mean" in r:
            print(
                f"{r['algo']} seed {r['seed']}: the encoder tells heads from tails in "
                f"{r['outcomes_told_apart']:.1%} of rolls with {r['codes_used']} codes; sigma "
                f"implies P(heads) {r['implied_p_heads_mean']:.3f} on average (truth 0.5, mean "
                f"absolute error {r['implied_p_heads_abs_error']:.3f})"
            )
    # a reused run appends its evaluations again: the last record of each point counts
    latest = {}
    for record in read_records(out):
        latest[(record["game"], record["algo"], record["seed"], record["step"])] = record
    plot([r for r in latest.values() if r["game"] == game], game, plot_path)


if __name__ == "__main__":
    main()
