"""Pig: could a run's network hold the exact values, and how much target noise would it take?

Self-play agents on Piglet choose 0.85-0.88 optimally. Is that the network (too small to tell
the close calls apart), its targets (coin-flip noise) or where it trains (positions self-play
never visits)? This benchmark takes the first out: a fresh copy of the run's own network (same
architecture, re-initialised) is fitted by regression on the exact ``2 P(win) - 1`` of every
reachable decision position, each position equally often; then its value head makes the one-ply
choices of `benchmarks.pig_value_choices`, scored against the solution. ``--noise`` adds
Gaussian noise of that standard deviation to every target drawn (fresh each time: like an
outcome's noise, not like a wrong label), so a row says how precise the value head would get
from noisy targets at full coverage. The run's own value head is scored beside them.

    python -m benchmarks.pig_value_capacity runs/pig_base/piglet_chance_alphazero_seed0
    python -m benchmarks.pig_value_capacity RUN --noise 0,0.3,1 --steps 4000
"""

from __future__ import annotations

import argparse
import copy

import numpy as np
import torch

from benchmarks.pig_value_choices import head_values, load_pig_run, lookahead_choices
from games.pig_optimal import reachable_decision_states
from mbrl.evaluation.pig_optimality import PigOptimality


def exact_targets(game, optimality: PigOptimality) -> tuple[torch.Tensor, torch.Tensor]:
    """``(obs [P, *obs_shape], value [P])``: every reachable decision position (forced stops
    included, since the one-ply lookahead reads them too) and its exact ``2 P(win) - 1``."""
    rules = optimality.solution.rules
    positions = reachable_decision_states(
        rules.winscore, dice_outcomes=rules.dice_outcomes, piglet=rules.piglet, choices_only=False
    )
    obs = torch.from_numpy(np.stack([game.observation(p) for p in positions]))
    return obs, torch.tensor(optimality.exact_values(positions), dtype=torch.float32)


def fit_exact_values(model, obs: torch.Tensor, target: torch.Tensor, args, noise: float) -> None:
    """Re-initialise ``model.network`` (in place) and fit its value head by regression on
    ``target`` plus fresh Gaussian noise of sd ``noise`` at every draw."""
    torch.manual_seed(args.seed)
    network = model.network
    for module in network.modules():
        if module is not network and hasattr(module, "reset_parameters"):
            module.reset_parameters()
    optimiser = torch.optim.Adam(network.parameters(), lr=args.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, args.steps)
    draws = torch.Generator().manual_seed(args.seed)
    network.train()
    for _ in range(args.steps):
        rows = torch.randint(len(target), (args.batch_size,), generator=draws)
        _, value_logits = network.predict(network.represent(obs[rows]))
        noisy = target[rows] + noise * torch.randn(args.batch_size, generator=draws)
        loss = (model.value_support.to_scalar(value_logits) - noisy).square().mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
    network.eval()


def mean_abs_error(model, obs: torch.Tensor, target: torch.Tensor) -> float:
    with torch.inference_mode():
        _, value = model.evaluate(obs.numpy())
    return float(np.abs(value - target.numpy()).mean())


def _noises(text: str) -> list[float]:
    try:
        noises = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 0,0.3,1, got {text!r}") from None
    if not noises or not all(0.0 <= x < float("inf") for x in noises):
        raise argparse.ArgumentTypeError(f"noise levels must be finite and >= 0, got {text!r}")
    return noises


def _at_least(smallest: int):
    def parse(text: str) -> int:
        value = int(text)
        if value < smallest:
            raise argparse.ArgumentTypeError(f"must be >= {smallest}, got {value}")
        return value

    return parse


def _learning_rate(text: str) -> float:
    value = float(text)
    if not 0.0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0 and finite, got {text!r}")
    return value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("checkpoint", help="a Pig run directory or .ckpt file")
    parser.add_argument("--noise", type=_noises, default=[0.0, 0.3, 1.0], help="target noise sd")
    parser.add_argument("--steps", type=_at_least(1), default=4000, help="updates per fit")
    parser.add_argument("--batch-size", type=_at_least(1), default=128)
    parser.add_argument("--lr", type=_learning_rate, default=1e-3, help="Adam, cosine to 0")
    parser.add_argument("--seed", type=_at_least(0), default=0)
    args = parser.parse_args(argv)
    loaded, optimality, game = load_pig_run(args.checkpoint, "pig_value_capacity")
    obs, target = exact_targets(game, optimality)
    run_model = loaded.agent(0).model
    models = {"the run's own value head": run_model}
    for noise in args.noise:
        models[f"fitted to exact values, noise sd {noise:g}"] = model = copy.deepcopy(run_model)
        fit_exact_values(model, obs, target, args, noise)
    print(
        f"{args.checkpoint}: {len(optimality.states)} roll-or-stop choices, {len(target)} "
        f"decision positions; fits of {args.steps} updates of {args.batch_size}\n"
    )
    header = (
        f"{'value head':<38} {'mean |error|':>12} {'optimal share':>13} {'on the path':>11} "
        f"{'win vs optimal':>14}"
    )
    print(header)
    print("-" * len(header))
    for name, model in models.items():
        choices = lookahead_choices(game, optimality.states, head_values(game, model))
        error, share = mean_abs_error(model, obs, target), optimality.shares(choices)
        print(
            f"{name:<38} {error:>12.4f} {share:>13.3f} "
            f"{optimality.share_on_path(choices):>11.3f} "
            f"{optimality.win_probability_against_optimal(choices):>14.3f}"
        )


if __name__ == "__main__":
    main()
