"""Pig: how well would a run's value head choose on its own? The value's precision apart from
the search's decision rule.

For every reachable roll-or-stop choice the value head's choice is a one-ply lookahead. It takes
the exact chance probabilities and the head's value of each position after the move, the
mover's view (terminal positions: the game's result). Those choices are scored against the
exact solution as the agent's own are (`mbrl.evaluation.pig_optimality`). The agent plays its
search's most visited move. So the two rows together say whether the search's decision rule or
the value behind it costs the optimal share. For Stochastic MuZero another row plays the
afterstate Q head of its learned model, without search: the move whose ``Q(phi(h(o), a))`` is
larger. A last row checks the lookahead itself with the exact values (it must score 1.0). The
last lines count the value head's mistakes by turn total, and its mean error there: self-play
rarely reaches high turn totals, and the head is far off there (`pig_value_capacity` shows that
the network could hold the exact values). A run trained with tree value targets
(``algo.tree_value_weight``) also has its position table scored: how far the table's targets,
and the head, are from the exact values, and the positions whose targets are furthest off
(this is how the biased targets of the search's mean Q values were found).

    python -m benchmarks.pig_value_choices runs/pig_base/piglet_chance_alphazero_seed0
    python -m benchmarks.pig_value_choices RUN --simulations 128
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Callable
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import torch

from benchmarks.game2048_model_probe import Probe
from games.pig_optimal import ROLL, STOP, state_key
from mbrl.checkpoint import load_checkpoint
from mbrl.evaluation.pig_optimality import PigOptimality
from mbrl.loading import LoadedAgent, load_agent

# (positions, mover) -> [len(positions)] the value of each position to ``mover``
Values = Callable[[list, int], np.ndarray]


def lookahead_choices(game, states: list, values: Values) -> np.ndarray:
    """``[len(states)]`` the move with the larger one-ply value at each decision state."""
    choices = []
    for state in states:
        mover = state.current_player()
        worth = {}
        for action in (ROLL, STOP):
            after = game.apply_decision(state, action)
            if after.state.is_chance_node():
                distribution = game.chance_distribution(after.state)
                codes = np.flatnonzero(distribution)
                children = [game.apply_chance(after.state, int(code)) for code in codes]
            else:
                distribution, codes, children = np.ones(1), np.zeros(1, np.int64), [after.state]
            start = game.returns(state)[mover]
            gains = np.array([game.returns(child)[mover] - start for child in children])
            worth[action] = float(distribution[codes] @ (gains + values(children, mover)))
        choices.append(ROLL if worth[ROLL] > worth[STOP] else STOP)
    return np.array(choices)


def head_values(game, model) -> Values:
    """The value head's (the search's ``model.evaluate``) value of each position to the mover
    (0 at terminal positions, whose result the returns carry)."""

    def values(positions: list, mover: int) -> np.ndarray:
        out = np.zeros(len(positions))
        live = [i for i, s in enumerate(positions) if not s.is_terminal()]
        if live:
            obs = np.stack([game.observation(positions[i]) for i in live])
            with torch.inference_mode():
                _, value = model.evaluate(obs)
            sign = [1.0 if positions[i].current_player() == mover else -1.0 for i in live]
            out[live] = np.asarray(value, np.float64) * np.array(sign)
        return out

    return values


def exact_values(optimality: PigOptimality) -> Values:
    """The exact ``2 P(win) - 1`` of each position to the mover (0 at terminal positions)."""
    win = optimality.solution.win_probability

    def values(positions: list, mover: int) -> np.ndarray:
        out = []
        for position in positions:
            if position.is_terminal():
                out.append(0.0)
                continue
            value = 2.0 * win[state_key(position)] - 1.0
            out.append(value if position.current_player() == mover else -value)
        return np.array(out)

    return values


def afterstate_q_choices(loaded: LoadedAgent, optimality: PigOptimality) -> np.ndarray:
    """Stochastic MuZero's afterstate Q head, no search: the move whose learned afterstate
    ``phi(h(o), a)`` has the larger Q (the mover's view; `Probe.learned_model` of the 2048
    probe), rolling where stopping is illegal."""
    probe = Probe(loaded)
    moves = np.array([ROLL, STOP])
    choices = []
    for state, legal in zip(optimality.states, optimality.legal, strict=True):
        q_roll, q_stop = probe.learned_model(state, moves)
        choices.append(STOP if legal[STOP] and q_stop >= q_roll else ROLL)
    return np.array(choices)


def mistakes_by_turn_total(optimality: PigOptimality, choices: np.ndarray) -> dict[int, tuple]:
    """``{turn total: (wrong choices, states)}``."""
    wrong, total = collections.Counter(), collections.Counter()
    for state, action in zip(optimality.states, choices, strict=True):
        key = state_key(state)
        total[key[2]] += 1
        wrong[key[2]] += int(action) not in optimality.solution.optimal_actions(*key)
    return {k: (wrong[k], total[k]) for k in sorted(total)}


def value_errors_by_turn_total(optimality: PigOptimality, model) -> dict[int, float]:
    """``{turn total: mean(value head - exact 2 P(win) - 1)}`` over the choice states, the
    mover's view: the sign says whether the head over- or under-values that turn total."""
    with torch.inference_mode():
        _, value = model.evaluate(optimality.obs)
    error = np.asarray(value, np.float64) - optimality.exact_value
    turn_totals = np.array([state_key(state)[2] for state in optimality.states])
    return {int(k): float(error[turn_totals == k].mean()) for k in np.unique(turn_totals)}


class TableErrors(NamedTuple):
    """The run's tree value table against the exact values, over its positions with a target."""

    positions: int
    valued: int
    target_error: float  # mean |target - exact|
    head_to_target: float  # mean |head - target|
    head_error: float  # mean |head - exact|
    worst: list  # [(state key, mover, exact, target, head)], the largest |target - exact| first


def table_errors(checkpoint: str, game, optimality: PigOptimality, model, worst: int = 5):
    """`TableErrors` of the run's position table (`mbrl.selfplay.tree_values`), or None when
    the run has none. Values are the mover's, ``2 P(win) - 1``. Each history is replayed with
    its moves checked (`ChanceGame.replay`)."""
    data = load_checkpoint(checkpoint).get("SelfPlayDataModule") or {}
    table = data.get("tree_values")
    if not table or not len(table["value"]):
        return None
    target = table["value"].numpy().astype(np.float64)
    states = [game.replay(history)[0] for history in table["histories"]]
    with torch.inference_mode():
        _, head = model.evaluate(table["obs"].numpy())
    head = np.asarray(head, np.float64)
    win = optimality.solution.win_probability
    keys = [state_key(state) for state in states]
    exact = np.array([2.0 * win[key] - 1.0 for key in keys])
    valued = np.isfinite(target)
    off = np.where(valued, np.abs(target - exact), -1.0)
    order = np.argsort(-off)[: min(worst, int(valued.sum()))]
    return TableErrors(
        positions=len(target),
        valued=int(valued.sum()),
        target_error=_mean(np.abs(target - exact)[valued]),
        head_to_target=_mean(np.abs(head - target)[valued]),
        head_error=_mean(np.abs(head - exact)[valued]),
        worst=[
            (keys[i], states[i].current_player(), exact[i], target[i], head[i])
            for i in order.tolist()
        ],
    )


def _mean(x: np.ndarray) -> float:
    """NaN for a table whose positions have no target yet (not numpy's empty-mean warning)."""
    return float(x.mean()) if len(x) else float("nan")


def load_pig_run(checkpoint: str, program: str):
    """``(loaded run, PigOptimality, its ChanceGame)``; a missing, corrupt or foreign
    checkpoint, or another game's run, exits with one line naming ``program``."""
    try:
        loaded = load_agent(checkpoint)
    except (ValueError, OSError) as error:
        raise SystemExit(f"{program}: error: {error}") from None
    config = loaded.metadata["config"]["game"]
    if loaded.kind != "chance" or config.get("name") != "pig":
        raise SystemExit(
            f"{program}: error: {checkpoint} is not a Pig run (its game: "
            f"{config.get('kind')} {config.get('name')!r})"
        )
    return loaded, PigOptimality(config.get("params", {})), loaded.chance_game()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("checkpoint", help="a Pig run directory or .ckpt file")
    parser.add_argument(
        "--simulations",
        type=int,
        default=-1,
        help="the search's, per move (-1 = the run's evaluation setting, 0 = the raw policy)",
    )
    args = parser.parse_args(argv)
    loaded, optimality, game = load_pig_run(args.checkpoint, "pig_value_choices")
    try:
        simulations = loaded.simulations(args.simulations, "--simulations")
    except ValueError as error:
        raise SystemExit(f"pig_value_choices: error: {error}") from None
    agent = loaded.agent(simulations)
    rows = {
        f"search, most visited ({simulations} sims)": _search_choices(agent, optimality),
        "value head, one ply, exact chance": lookahead_choices(
            game, optimality.states, head_values(game, agent.model)
        ),
    }
    if loaded.metadata["algo"] == "stochastic_muzero":
        rows["afterstate Q head, no search"] = afterstate_q_choices(loaded, optimality)
    rows["exact values, one ply (check)"] = lookahead_choices(
        game, optimality.states, exact_values(optimality)
    )
    print(f"{args.checkpoint}: {len(optimality.states)} reachable roll-or-stop choices\n")
    header = f"{'chooser':<36} {'optimal share':>13} {'on the path':>11} {'win vs optimal':>14}"
    print(header)
    print("-" * len(header))
    for name, choices in rows.items():
        print(
            f"{name:<36} {optimality.shares(choices):>13.3f} "
            f"{optimality.share_on_path(choices):>11.3f} "
            f"{optimality.win_probability_against_optimal(choices):>14.3f}"
        )
    head = rows["value head, one ply, exact chance"]
    print("\nthe value head's mistakes by turn total (wrong / states):")
    print(
        "  "
        + ", ".join(
            f"{k}: {w}/{n}" for k, (w, n) in mistakes_by_turn_total(optimality, head).items()
        )
    )
    print("the value head's mean error by turn total (head - exact, in [-2, 2]):")
    errors = value_errors_by_turn_total(optimality, agent.model)
    print("  " + ", ".join(f"{k}: {e:+.3f}" for k, e in errors.items()))
    try:
        table = table_errors(args.checkpoint, game, optimality, agent.model)
    except (ValueError, KeyError) as error:
        raise SystemExit(f"pig_value_choices: error: the run's position table: {error}") from None
    if table is not None:
        print(
            f"\nthe tree value table: {table.valued} of {table.positions} positions with a "
            f"target; mean |target - exact| {table.target_error:.4f}, |head - target| "
            f"{table.head_to_target:.4f}, |head - exact| {table.head_error:.4f}"
        )
        print("its targets furthest from the exact values ((mover, opponent, turn total)):")
        for key, mover, exact, target, head in table.worst:
            print(
                f"  {key} player {mover}: exact {exact:+.3f}, target {target:+.3f}, "
                f"head {head:+.3f}"
            )


def _search_choices(agent, optimality: PigOptimality) -> np.ndarray:
    """The agent's own moves, as `PigOptimality.measure` asks for them."""
    observed = SimpleNamespace(obs=optimality.obs, legal=optimality.legal)
    return np.asarray(agent.act(observed, optimality.states))


if __name__ == "__main__":
    main()
