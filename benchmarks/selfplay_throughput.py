"""Self-play throughput with the real network: moves/s and simulations/s, and the share of
self-play time spent in the search's own work against the network and the game rules.

    python -m benchmarks.selfplay_throughput
    python -m benchmarks.selfplay_throughput --games tic_tac_toe --batch 256

The three shares come from timing each part inside the same self-play steps: ``network`` (the
batched forward passes), ``rules`` (cloning states, playing moves, building observations and
masks in Python), ``search`` (everything else: the numba kernels and their Python glue).
"""

from __future__ import annotations

import argparse
import time

import torch

from games import BoardGame, BoardGameEnv
from mbrl.networks import AlphaZeroNet
from mbrl.selfplay.actor import SelfPlayActor
from mbrl.selfplay.game_model import GameModel
from search import SearchSettings

SIZES = {"tic_tac_toe": (32, 2), "connect_four": (32, 4), "othello": (64, 4), "go": (64, 6)}


class TimedModel(GameModel):
    """GameModel that also times its search calls (the rules and the network)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.model_seconds = 0.0  # root + recurrent calls: rules and network

    def search_root(self, states, obs):
        start = time.perf_counter()
        result = super().search_root(states, obs)
        self.model_seconds += time.perf_counter() - start
        return result

    def recurrent_fn(self, states, actions):
        start = time.perf_counter()
        result = super().recurrent_fn(states, actions)
        self.model_seconds += time.perf_counter() - start
        return result


def measure(name: str, policy: str, sims: int, batch: int, steps: int) -> dict:
    game = BoardGame(name, {"board_size": 9} if name == "go" else {})
    channels, blocks = SIZES.get(name, (64, 4))
    torch.manual_seed(0)
    network = AlphaZeroNet(game.obs_shape, game.num_actions, channels=channels, blocks=blocks)
    model = TimedModel(game, network.eval())
    actor = SelfPlayActor(
        BoardGameEnv(game, batch),
        model,
        SearchSettings(policy=policy, num_simulations=sims),
        seed=0,
        two_player=True,
        temperature_moves=8,
        bootstrap_truncation=False,
    )
    actor.step()  # compile and warm up
    model.network_seconds = model.model_seconds = 0.0
    actor.search_seconds = actor.env_seconds = 0.0
    start = time.perf_counter()
    for _ in range(steps):
        actor.step()
    wall = time.perf_counter() - start
    # The rules: inside the search's model calls, and the env's moves, observations and masks.
    rules = model.model_seconds - model.network_seconds + actor.env_seconds
    search = actor.search_seconds - model.model_seconds
    return {
        "game": name,
        "policy": policy,
        "sims": sims,
        "B": batch,
        "moves/s": steps * batch / wall,
        "sims/s": steps * batch * sims / wall,
        "network %": 100 * model.network_seconds / wall,
        "rules %": 100 * rules / wall,
        "search %": 100 * search / wall,
        "net": f"{channels}x{blocks}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default="tic_tac_toe,connect_four,othello")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")
    header = f"{'game':>13} {'policy':>6} {'net':>5} {'sims':>4} {'B':>4} {'moves/s':>8} {'sims/s':>8} {'network %':>9} {'rules %':>7} {'search %':>8}"
    print(header)
    print("-" * len(header))
    for name in args.games.split(","):
        for policy in ("puct", "gumbel"):
            r = measure(name, policy, args.simulations, args.batch, args.steps)
            print(
                f"{r['game']:>13} {r['policy']:>6} {r['net']:>5} {r['sims']:>4} {r['B']:>4} "
                f"{r['moves/s']:>8.0f} {r['sims/s']:>8.0f} {r['network %']:>9.1f} "
                f"{r['rules %']:>7.1f} {r['search %']:>8.1f}"
            )


if __name__ == "__main__":
    main()
