r"""Can a torso learn 2048's merge rewards? MuZero's own reward path, fitted by supervision.

    python -m benchmarks.game2048_reward_fit [--positions 30000] [--updates 3000]

Positions come from uniformly random play of 2048 (to the 512 tile), each with the true reward of
all four moves (the merges they make; 0 and masked where a move is illegal). The fit is the one
MuZero's training does at the first unrolled step: ``MuZeroNet.dynamics(represent(obs), a)``'s
reward logits, cross-entropy to the two-hot target of ``h(reward)``, for every legal move. It runs
for each torso on the same data and batches, and prints the held-out correlation and mean
absolute error of the predicted reward (the expectation over the atoms) as training goes.

With the flattened board (``mlp``) the fit stalls well short of the truth; read line by line
(``lines``, `mbrl.networks.lines`) it gets close, since a move's merges are a sum over lines.
The networks are the 2048 preset's (configs/experiment/game2048_stochastic.yaml).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import torch

from benchmarks.learning_runs import compose_train
from games.chance import ChanceGame
from mbrl.config import ModelConfig
from mbrl.networks.muzero import MuZeroNet
from mbrl.networks.support import ScalarSupport

TORSOS = ("mlp", "lines")


def preset_model(torso: str) -> ModelConfig:
    """The 2048 preset's network sizes (``experiment=game2048_stochastic``) with ``torso``."""
    model = compose_train("experiment=game2048_stochastic").model
    return dataclasses.replace(model, torso=torso)


def random_play_positions(count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(obs [P, 10, 4, 4], rewards [P, 4], legal [P, 4])`` from random games, until ``count``."""
    game = ChanceGame("2048", {"max_tile": 512})
    rng = np.random.default_rng(seed)
    observations, rewards, legal_masks = [], [], []
    while len(observations) < count:
        state, _ = game.resolve_chance(game.new_state(), rng)
        while not state.is_terminal() and len(observations) < count:
            legal = game.legal_mask(state)
            reward = np.zeros(game.num_actions, np.float32)
            for action in np.flatnonzero(legal):
                reward[action] = game.apply_decision(state, int(action)).reward
            observations.append(game.observation(state))
            rewards.append(reward)
            legal_masks.append(legal)
            state = game.apply(state, int(rng.choice(np.flatnonzero(legal))), rng).state
    return np.stack(observations), np.stack(rewards), np.stack(legal_masks)


def predicted_rewards(net: MuZeroNet, support: ScalarSupport, obs: torch.Tensor) -> torch.Tensor:
    """``[P, A]``: the expected reward of every move from every position."""
    latent = net.represent(obs)
    columns = []
    for action in range(net.num_actions):
        actions = torch.full((len(obs),), action, dtype=torch.long)
        columns.append(support.to_scalar(net.dynamics(latent, actions)[1]))
    return torch.stack(columns, 1)


def fit(torso: str, data, args, report) -> None:
    obs, rewards, legal = data
    torch.manual_seed(args.seed)
    model = preset_model(torso)
    net = MuZeroNet(obs.shape[1:], rewards.shape[1], model)
    support = ScalarSupport(model.reward_support_size)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    train = int(0.8 * len(obs))
    batches = np.random.default_rng(args.seed).integers(0, train, (args.updates, 128))
    started = time.perf_counter()
    for update, rows in enumerate(batches, 1):
        rows = torch.as_tensor(rows)
        latent = net.represent(obs[rows])
        loss = 0.0
        for action in range(net.num_actions):
            actions = torch.full((len(rows),), action, dtype=torch.long)
            logits = net.dynamics(latent, actions)[1]
            target = support.to_distribution(rewards[rows, action])
            cross_entropy = -(target * torch.log_softmax(logits, -1)).sum(-1)
            loss = loss + (cross_entropy * legal[rows, action]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if update % args.report_every == 0 or update == args.updates:
            net.eval()
            with torch.no_grad():
                predicted = predicted_rewards(net, support, obs[train:])
            net.train()
            mask = legal[train:]
            truth, guess = rewards[train:][mask].numpy(), predicted[mask].numpy()
            report(
                torso,
                update,
                float(np.corrcoef(truth, guess)[0, 1]),
                float(np.abs(truth - guess).mean()),
                time.perf_counter() - started,
            )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=30000)
    parser.add_argument("--updates", type=int, default=3000)
    parser.add_argument("--report-every", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torsos", default=",".join(TORSOS))
    args = parser.parse_args(argv)
    torsos = args.torsos.split(",")
    for torso in torsos:
        if torso not in TORSOS:
            parser.error(f"--torsos: {torso!r} is not one of {TORSOS}")
    obs, rewards, legal = random_play_positions(args.positions, args.seed)
    data = (torch.as_tensor(obs), torch.as_tensor(rewards), torch.as_tensor(legal))
    print(
        f"{len(obs)} positions of random play (80% to fit, 20% held out); legal moves' merge "
        f"reward: mean {rewards[legal].mean():.1f}, max {rewards.max():.0f}"
    )
    print(f"{'torso':6s} {'updates':>7s} {'test corr':>9s} {'test MAE':>8s} {'seconds':>7s}")

    def report(torso, update, correlation, error, seconds):
        print(f"{torso:6s} {update:7d} {correlation:9.3f} {error:8.2f} {seconds:7.0f}", flush=True)

    for torso in torsos:
        fit(torso, data, args, report)


if __name__ == "__main__":
    main()
