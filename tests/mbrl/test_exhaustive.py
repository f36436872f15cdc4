"""Exhaustive play walks every opponent move: perfect agents lose no line, others are caught."""

import numpy as np
import pytest

from games import BoardGame
from games.minimax import MinimaxSolver
from mbrl.evaluation.exhaustive import play_exhaustively


@pytest.fixture(scope="module")
def game():
    return BoardGame("tic_tac_toe")


class FirstOptimal:
    """Deterministic perfect play: the first minimax-optimal move."""

    def __init__(self, game):
        self.solver = MinimaxSolver(game.game)

    def choose(self, states, rng=None):
        return np.array([self.solver.optimal_actions(s)[0] for s in states])


class FirstLegal:
    """Deterministic and weak: the lowest legal move."""

    def choose(self, states, rng=None):
        return np.array([s.legal_actions()[0] for s in states])


def lines_by_replay(state, agent, seat):
    """[wins, draws, losses] by walking every line without merging positions (slow, exact)."""
    if state.is_terminal():
        score = np.sign(state.returns()[seat])
        return np.array([score > 0, score == 0, score < 0], np.int64)
    if state.current_player() == seat:
        return lines_by_replay(state.child(int(agent.choose([state])[0])), agent, seat)
    return sum(lines_by_replay(state.child(a), agent, seat) for a in state.legal_actions())


def test_perfect_play_loses_no_line_in_either_seat(game):
    result = play_exhaustively(game, FirstOptimal(game))
    assert result.perfect and result.losing_lines == 0
    assert result.first.lines > 0 and result.second.lines > 0
    assert result.first.losing_line == () == result.second.losing_line


@pytest.mark.parametrize("seat", [0, 1])
def test_merged_positions_count_the_same_lines_as_replaying_every_game(game, seat):
    agent = FirstLegal()
    result = play_exhaustively(game, agent)
    counted = (result.first, result.second)[seat]
    expected = lines_by_replay(game.new_state(), agent, seat)
    assert (counted.wins, counted.draws, counted.losses) == tuple(expected)
    assert counted.lines == expected.sum()


def test_a_weak_agent_is_caught_with_a_line_that_loses(game):
    result = play_exhaustively(game, FirstLegal())
    assert not result.perfect and result.second.losses > 0
    state = game.new_state()
    for move in result.second.losing_line:  # replays to a loss for the second seat
        legal = {state.action_to_string(a): a for a in state.legal_actions()}
        state.apply_action(legal[move])
    assert state.is_terminal() and state.returns()[1] < 0


def test_a_game_too_large_to_walk_is_refused():
    with pytest.raises(ValueError, match="exhaustive play is for small games"):
        play_exhaustively(BoardGame("connect_four"), FirstLegal(), max_positions=1000)


def test_training_evaluates_every_line_and_stops_only_at_perfect_play(tiny_config, tmp_path):
    import json

    from mbrl.train import train

    cfg = tiny_config(
        f"run_dir={tmp_path}",
        "eval.every=10",
        "eval.exhaustive=true",
        "eval.stop_when_perfect=true",
        "eval.opponents=[]",
    )
    summary = train(cfg)
    records = [json.loads(line) for line in (tmp_path / "eval.jsonl").read_text().splitlines()]
    lost = [sum(r["exhaustive"][seat]["losses"] for seat in ("first", "second")) for r in records]
    assert all(r["exhaustive"]["second"]["lines"] > 0 for r in records)
    # A 20-step network is not perfect, so the run goes on to max_steps.
    assert all(lost) and summary["steps"] == 20 and summary["perfect_at"] is None


def test_mbrl_eval_reports_every_line(trained_run):
    from mbrl.evaluate import EvalCommandConfig, evaluate

    run_dir, _ = trained_run
    report = evaluate(
        EvalCommandConfig(checkpoint=str(run_dir), opponents=[], exhaustive=True, simulations=2)
    )
    assert set(report["exhaustive"]) == {"first", "second"}
    assert report["exhaustive"]["first"]["lines"] > 0
