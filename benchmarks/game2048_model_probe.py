r"""Where a learned model of 2048 fails: one-step lookahead players that each trust one part of a
trained checkpoint (MuZero's or Stochastic MuZero's; the true-chance AlphaZero's value alone)
and the true game for the rest.

    python -m benchmarks.game2048_model_probe runs/bench_chance/2048_muzero_seed0 --episodes 16

Each player picks, at every move, the legal action with the highest one-step score:

- ``random``: none (the floor);
- ``true reward``: the merge the move makes (the greedy player; needs no network);
- ``true model + learned value``: the true merge, plus the network's value of every position the
  random tile can make, weighted by its true probability (the value head on real observations);
- ``learned reward``: the model's predicted reward (MuZero: ``g(h(o), a)``; Stochastic MuZero:
  each code's reward from the afterstate ``phi(h(o), a)``, weighted by sigma);
- ``learned model``: the model's own one-step Q (MuZero: reward + discount * value of
  ``g(h(o), a)``; Stochastic MuZero: the Q head of the afterstate ``phi(h(o), a)``);
- ``learned model, through codes`` (Stochastic MuZero): reward + discount * value of every
  code's next state, weighted by sigma, what a search that expanded every chance child would see.

If ``true model + learned value`` beats ``true reward`` while ``learned model`` does not beat
``random``, the value is fine and the dynamics are what to fix. Prints a table; ``--out`` appends
it as JSON lines.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from games.chance import ChanceGame
from mbrl.jsonl_log import append_records
from mbrl.loading import LoadedAgent, load_agent
from mbrl.networks.support import ScalarSupport

Scores = Callable[[object, np.ndarray], np.ndarray]  # (state, legal actions) -> their scores


def play(game: ChanceGame, scores: Scores, episodes: int, seed: int) -> np.ndarray:
    """``[episodes]`` final scores of the player that takes the legal action of highest score,
    ties broken at random (a fixed order, say "up first", is a strategy of its own)."""
    finals = []
    ties = np.random.default_rng([seed, 1])
    for episode in range(episodes):
        rng = np.random.default_rng([seed, 0, episode])
        state, _ = game.resolve_chance(game.new_state(), rng)
        while not state.is_terminal():
            legal = np.flatnonzero(game.legal_mask(state))
            score = np.asarray(scores(state, legal), np.float64)
            best = np.flatnonzero(score == score.max())
            action = legal[ties.choice(best)]
            state = game.apply(state, int(action), rng).state
        finals.append(game.returns(state)[0])
    return np.asarray(finals)


class Probe:
    """The one-step scores of one checkpoint's parts."""

    def __init__(self, loaded: LoadedAgent):
        self.algo = loaded.metadata["algo"]
        self.game = loaded.chance_game()
        self.network = loaded.network.eval()
        settings = self.network.settings
        self.value_support = ScalarSupport(settings.support_size)
        self.reward_support = ScalarSupport(settings.reward_support_size)
        self.discount = float(loaded.metadata["config"]["algo"]["discount"])

    def random(self, state, legal: np.ndarray) -> np.ndarray:
        return np.zeros(len(legal))  # all tied: `play` picks one at random

    def true_reward(self, state, legal: np.ndarray) -> np.ndarray:
        return np.array([self.game.apply_decision(state, int(a)).reward for a in legal])

    def _obs(self, states) -> torch.Tensor:
        return torch.tensor(np.stack([self.game.observation(s) for s in states]))

    @torch.inference_mode()
    def _values(self, states) -> np.ndarray:
        _, value_logits = self.network.predict(self.network.represent(self._obs(states)))
        value = self.value_support.to_scalar(value_logits).numpy()
        return np.where([s.is_terminal() for s in states], 0.0, value)

    def true_model_learned_value(self, state, legal: np.ndarray) -> np.ndarray:
        scores = []
        for action in legal.tolist():
            after = self.game.apply_decision(state, action)
            if after.terminal:
                scores.append(after.reward)
                continue
            probabilities = self.game.chance_distribution(after.state)
            codes = np.flatnonzero(probabilities)
            children = [self.game.apply_chance(after.state, int(c)) for c in codes]
            expected = float(probabilities[codes] @ self._values(children))
            scores.append(after.reward + self.discount * expected)
        return np.asarray(scores)

    def _latents(self, state, legal: np.ndarray) -> torch.Tensor:
        """``[M, ...]``: the state's latent once per legal move (MuZero), or each move's
        afterstate ``phi(h(o), a)`` (Stochastic MuZero)."""
        obs = self._obs([state])
        latent = self.network.represent(obs.expand(len(legal), *obs.shape[1:]))
        if self.algo == "stochastic_muzero":
            return self.network.afterstate(latent, torch.as_tensor(legal))
        return latent

    @torch.inference_mode()
    def _unrolled(self, state, legal: np.ndarray):
        latent = self._latents(state, legal)
        if self.algo == "stochastic_muzero":
            _, q_logits = self.network.predict_afterstate(latent)
            return None, self.value_support.to_scalar(q_logits).numpy()
        latent, reward_logits, _ = self.network.dynamics(latent, torch.as_tensor(legal))
        reward = self.reward_support.to_scalar(reward_logits).numpy()
        _, value_logits = self.network.predict(latent)
        return reward, reward + self.discount * self.value_support.to_scalar(value_logits).numpy()

    def learned_reward(self, state, legal: np.ndarray) -> np.ndarray:
        if self.algo == "stochastic_muzero":
            return self._through_codes(state, legal)[0]
        return self._unrolled(state, legal)[0]

    @torch.inference_mode()
    def _through_codes(self, state, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Stochastic MuZero's ``(E_sigma[r], E_sigma[r + discount * v])`` of each move: every
        code's transition from the afterstate, weighted by sigma (all the chance children a
        search would expand)."""
        net = self.network
        afterstate = self._latents(state, legal)
        sigma = torch.softmax(net.predict_afterstate(afterstate)[0], -1)  # [M, C]
        codes = torch.arange(net.num_codes).repeat(len(legal))  # [M * C], move-major
        next_latent, reward_logits, _ = net.dynamics(
            afterstate.repeat_interleave(net.num_codes, 0), codes
        )
        reward = self.reward_support.to_scalar(reward_logits).view(len(legal), -1)
        value = self.value_support.to_scalar(net.predict(next_latent)[1]).view(len(legal), -1)
        return (
            (sigma * reward).sum(-1).numpy(),
            (sigma * (reward + self.discount * value)).sum(-1).numpy(),
        )

    def learned_expectation(self, state, legal: np.ndarray) -> np.ndarray:
        return self._through_codes(state, legal)[1]

    def learned_model(self, state, legal: np.ndarray) -> np.ndarray:
        return self._unrolled(state, legal)[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", help="run directories or .ckpt files (2048)")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="append the rows here (JSONL)")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    rows = []
    for run in args.runs:
        probe = Probe(load_agent(run))
        if probe.game.name != "2048":
            parser.error(f"{run} was trained on {probe.game.name!r}; this probe needs 2048")
        players: dict[str, Scores] = {
            "random": probe.random,
            "true reward": probe.true_reward,
            "true model + learned value": probe.true_model_learned_value,
        }
        if probe.algo != "chance_alphazero":  # its network has no trained dynamics (K = 0)
            players["learned model"] = probe.learned_model
        if probe.algo != "chance_alphazero":
            players["learned reward"] = probe.learned_reward
        if probe.algo == "stochastic_muzero":
            players["learned model, through codes"] = probe.learned_expectation
        for name, scores in players.items():
            finals = play(probe.game, scores, args.episodes, args.seed)
            rows.append(
                {
                    "run": str(run),
                    "algo": probe.algo,
                    "player": name,
                    "episodes": args.episodes,
                    "mean": float(finals.mean()),
                    "sem": float(finals.std(ddof=1) / np.sqrt(len(finals))),
                    "median": float(np.median(finals)),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'run':<44} {'player':<28} {'mean score':>10} {'+-sem':>7} {'median':>7}")
    for r in rows:
        print(
            f"{Path(r['run']).name:<44} {r['player']:<28} {r['mean']:>10.0f} {r['sem']:>7.0f} "
            f"{r['median']:>7.0f}"
        )
    if args.out:
        append_records(args.out, rows)


if __name__ == "__main__":
    main()
