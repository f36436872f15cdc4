"""Chess on python-chess rules with move tokens: games end as the rules say, B games play in
lockstep and resume from their move lists, and the search plays it with the true rules."""

import chess
import numpy as np
import pytest
import torch

from games.chess_game import TERMINAL, ChessGame
from games.chess_tokens import NUM_MOVES, move_to_token
from games.openspiel import BoardGameEnv
from mbrl.agent import SearchAgent
from mbrl.networks.alphazero import PolicyValue
from mbrl.selfplay.game_model import GameModel
from search import SearchSettings


def play(game: ChessGame, ucis: list[str]):
    state = game.new_state()
    for uci in ucis:
        state = game.apply(state, move_to_token(uci)).state
    return state


def test_fools_mate_ends_the_game_with_black_winning():
    game = ChessGame()
    state = game.new_state()
    moves = ["f2f3", "e7e5", "g2g4"]
    for uci in moves:
        transition = game.apply(state, move_to_token(uci))
        assert not transition.terminal and transition.turn_changed
        state = transition.state
    mate = game.apply(state, move_to_token("d8h4"))
    assert mate.terminal and mate.reward == 1.0  # the mover's reward
    assert mate.state.returns() == [-1.0, 1.0] and mate.state.current_player() == TERMINAL
    assert not game.legal_mask(mate.state).any() and mate.state.legal_actions() == []
    assert state.board.fen() != mate.state.board.fen()  # the parent is left as it was


def test_a_threefold_repetition_is_a_draw():
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    almost = play(ChessGame(), shuffle + shuffle[:3])  # a repeating move is available, not made
    assert not almost.is_terminal()
    state = play(ChessGame(), shuffle * 2)  # the start position, a third time
    assert state.is_terminal() and state.returns() == [0.0, 0.0]


def test_stalemate_is_a_draw():
    state = ChessGame().new_state("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert state.is_terminal() and state.returns() == [0.0, 0.0]


def test_an_illegal_move_token_is_refused():
    game = ChessGame()
    with pytest.raises(ValueError, match=r"move e2e5 \(token \d+\) is illegal"):
        game.apply(game.new_state(), move_to_token("e2e5"))


def test_unknown_parameters_are_refused():
    with pytest.raises(ValueError, match=r"takes the parameter history, got \['depth'\]"):
        ChessGame({"depth": 3})


def test_random_games_play_to_the_end_in_lockstep_and_resume_from_their_moves():
    game = ChessGame({"history": 4}, max_moves=80)
    env = BoardGameEnv(game, batch_size=4)
    rng = np.random.default_rng(0)
    step = env.reset()
    assert step.obs.shape == (4, 80) and step.legal.shape == (4, NUM_MOVES)
    for _ in range(40):
        actions = [rng.choice(np.flatnonzero(legal)) if legal.any() else 0 for legal in step.legal]
        step = env.step(actions)
    copy = BoardGameEnv(game, batch_size=4)
    copy.load_state_dict(env.state_dict())
    np.testing.assert_array_equal(copy.timestep().obs, env.timestep().obs)
    while not (step.terminated | step.truncated).all():
        actions = [rng.choice(np.flatnonzero(legal)) if legal.any() else 0 for legal in step.legal]
        step = env.step(actions)
    assert (env.moves <= 80).all()


class UniformNet(torch.nn.Module):
    """Equal priors, value 0: the search alone decides."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.zeros(()))

    def forward(self, obs):
        batch = obs.shape[0]
        return PolicyValue(torch.zeros(batch, NUM_MOVES) * self.scale, torch.zeros(batch))


def test_the_search_finds_mate_in_one_with_the_true_rules():
    game = ChessGame()
    state = game.new_state("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")  # Ra8#
    settings = SearchSettings(policy="gumbel", num_simulations=64, max_num_considered_actions=16)
    agent = SearchAgent(GameModel(game, UniformNet()), settings, game=game)
    action = agent.choose([state])[0]
    assert chess.Move.from_uci("a1a8") == game.apply(state, action).state.board.peek()


def test_moves_are_named_in_san_and_typed_in_san_or_uci():
    from mbrl.play import parse_move

    game = ChessGame()
    state = game.new_state("4k3/8/8/8/8/2p5/1P1B4/4K3 w - - 0 1")  # bxc3 and Bxc3 both legal
    pawn, bishop = move_to_token("b2c3"), move_to_token("d2c3")
    assert game.action_to_string(state, pawn) == "bxc3"
    assert parse_move("bxc3", state, game) == pawn and parse_move("Bxc3", state, game) == bishop
    assert parse_move("D2C3", state, game) == bishop  # UCI in any case: one move only
    assert parse_move("BXC3", state, game) is None  # both captures: ambiguous
    assert parse_move("e2e4", state, game) is None
