"""The chess transformer: shapes, a value head over win-probability bins whose two-hot targets
keep the expectation exact, and an AlphaZero objective whose loss falls on chess positions."""

import chess
import numpy as np
import pytest
import torch

from games.chess_game import ChessGame
from games.chess_tokens import NUM_MOVES, move_to_token
from mbrl.losses import win_probability_bins
from mbrl.networks.chess_transformer import ChessNetSettings, ChessTransformer
from mbrl.networks.transformer_block import TransformerBlock
from mbrl.objectives import AlphaZeroObjective

SMALL = ChessNetSettings(layers=2, heads=2, width=32, value_bins=16)


@pytest.mark.parametrize("bins", [2, 16, 32])
def test_win_probability_bins_are_a_two_hot_with_the_exact_expectation(bins):
    scores = torch.tensor([-1.0, -0.3, 0.0, 0.5, 1.0, 1.7])
    target = win_probability_bins(scores, bins)
    assert torch.allclose(target.sum(-1), torch.ones(6))
    assert ((target > 0).sum(-1) <= 2).all()
    centres = torch.linspace(0, 1, bins)
    expected = (scores.clamp(-1, 1) + 1) / 2
    torch.testing.assert_close((target * centres).sum(-1), expected)


def test_the_network_maps_board_tokens_to_move_logits_and_a_value():
    game = ChessGame({"history": 2})
    net = ChessTransformer(game.obs_shape[0], SMALL)
    obs = torch.from_numpy(np.stack([game.observation(game.new_state())] * 3))
    out = net(obs)
    assert out.logits.shape == (3, NUM_MOVES) and out.value_logits.shape == (3, 16)
    assert ((out.value >= -1) & (out.value <= 1)).all()
    with pytest.raises(ValueError, match=r"expected board tokens of shape \[B, 78\]"):
        net(obs[:, :10])


def test_a_block_computing_only_the_last_position_matches_the_full_block():
    torch.manual_seed(0)
    block = TransformerBlock(width=32, heads=4).eval()
    x = torch.randn(3, 11, 32)
    full = block(x)
    last = block(x, last_only=True)
    assert last.shape == (3, 1, 32)
    torch.testing.assert_close(last[:, 0], full[:, -1], rtol=1e-5, atol=1e-5)
    assert (last[:, 0] - block(x[:, :-1])[:, -1]).abs().max() > 1e-3  # the last token matters


def test_the_alphazero_objective_fits_chess_positions():
    torch.manual_seed(0)
    game = ChessGame()
    fens = [chess.STARTING_FEN, "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"]
    states = [game.new_state(fen) for fen in fens]
    policy = np.zeros((2, NUM_MOVES), np.float32)
    policy[0, move_to_token("e2e4")] = policy[1, move_to_token("a1a8")] = 1.0
    batch = {
        "obs": torch.from_numpy(np.stack([game.observation(s) for s in states])),
        "legal": torch.from_numpy(np.stack([game.legal_mask(s) for s in states])),
        "policy": torch.from_numpy(policy),
        "value": torch.tensor([0.0, 1.0]),
        "weights": torch.ones(2),
    }
    net = ChessTransformer(game.obs_shape[0], SMALL)
    optimizer = torch.optim.AdamW(net.parameters(), lr=3e-3)
    objective = AlphaZeroObjective()
    first = None
    for _ in range(60):
        loss, errors, _ = objective(net, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.2 * first and errors.shape == (2,)
    out = net(batch["obs"])
    assert out.logits.argmax(-1).tolist() == [move_to_token("e2e4"), move_to_token("a1a8")]
    assert out.value[1] > 0.5


def test_alphazero_trains_on_chess_tokens_and_its_checkpoint_plays(tiny_config, tmp_path):
    from mbrl.loading import load_agent
    from mbrl.train import train

    cfg = tiny_config(
        "game=chess_tokens",
        "game.max_moves=12",  # short games: the tiny run's replay fills in seconds
        "algo=gumbel_alphazero",
        "eval.opponents=[random,lookahead]",
        "eval.games=2",
        "model.channels=32",
        "model.blocks=1",
        f"run_dir={tmp_path}",
    )
    summary = train(cfg)
    assert summary["steps"] == 20
    loaded = load_agent(tmp_path)
    assert isinstance(loaded.game, ChessGame) and loaded.game.params == {"history": 8}
    state = loaded.game.new_state()
    action = loaded.agent(num_simulations=4).choose([state])[0]
    assert action in state.legal_actions()


def test_elo_intervals_cover_the_estimate_and_stay_open_at_a_clean_sweep():
    from mbrl.evaluation.elo import elo_interval

    elo, low, high = elo_interval(30, 10, 10)
    assert low < elo < high and elo == pytest.approx(400 * np.log10(0.7 / 0.3))
    swept = elo_interval(0, 0, 20)
    assert swept[1] <= swept[0] < swept[2]  # not a point: the best it could be is wider
    assert elo_interval(100, 0, 100)[0] == 0.0
