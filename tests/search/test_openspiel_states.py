"""The search on real game states: OpenSpiel tic-tac-toe states as per-node Python objects.

Exercises the object-embedding path, per-node legal masks, and the two-player discounts
(``-1`` between moves, ``0`` into a terminal state) that AlphaZero will use.
"""

import numpy as np
import pyspiel
import pytest

import search

GAME = pyspiel.load_game("tic_tac_toe")
NUM_ACTIONS = GAME.num_distinct_actions()


def legal_mask(state) -> np.ndarray:
    mask = np.zeros(NUM_ACTIONS, np.bool_)
    mask[state.legal_actions()] = True
    return mask


def recurrent_fn(states: list, actions: np.ndarray):
    """Exact rules, a uniform prior and a zero value: only terminal rewards carry information."""
    children, rewards, discounts, legal = [], [], [], []
    for state, action in zip(states, actions.tolist(), strict=True):
        child = state.clone()
        if state.is_terminal():  # a terminal node re-selected: stay absorbed
            rewards.append(0.0)
            discounts.append(0.0)
            legal.append(np.ones(NUM_ACTIONS, np.bool_))
            children.append(child)
            continue
        mover = state.current_player()
        child.apply_action(action)
        terminal = child.is_terminal()
        rewards.append(child.returns()[mover] if terminal else 0.0)
        discounts.append(0.0 if terminal else -1.0)
        legal.append(np.ones(NUM_ACTIONS, np.bool_) if terminal else legal_mask(child))
        children.append(child)
    batch = len(states)
    step = search.StepOutput(
        reward=np.array(rewards, np.float32),
        discount=np.array(discounts, np.float32),
        prior_logits=np.zeros((batch, NUM_ACTIONS), np.float32),
        value=np.zeros(batch, np.float32),
        legal=np.stack(legal),
    )
    return step, children


def state_after(moves: list[int]):
    state = GAME.new_initial_state()
    for move in moves:
        state.apply_action(move)
    return state


# Board cells 0..8 row by row; x moves first.
WIN_IN_ONE = ([0, 3, 1, 4], 2)  # x: 0, 1 -> x wins at 2
BLOCK = ([0, 4, 1], 2)  # x threatens 0-1-2; o must block at 2
POSITIONS = {"win_in_one": WIN_IN_ONE, "block": BLOCK}


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
def test_search_plays_the_forced_move_on_real_game_states(policy):
    states = [state_after(moves) for moves, _ in POSITIONS.values()]
    expected = [move for _, move in POSITIONS.values()]
    root = search.RootOutput(
        prior_logits=np.zeros((len(states), NUM_ACTIONS), np.float32),
        value=np.zeros(len(states), np.float32),
        embedding=states,
    )
    kwargs = dict(
        num_simulations=300,
        legal_mask=np.stack([legal_mask(s) for s in states]),
        deterministic=True,
    )
    if policy == "muzero":
        out = search.muzero_policy(root, recurrent_fn, **kwargs)
    else:
        out = search.gumbel_muzero_policy(
            root, recurrent_fn, max_num_considered_actions=9, **kwargs
        )
    np.testing.assert_array_equal(out.action, expected)
    # Node embeddings are the game states reached along each edge.
    for b, (moves, move) in enumerate(POSITIONS.values()):
        child = out.tree.children_index[b, 0, move]
        assert str(out.embeddings[b][child]) == str(state_after([*moves, move]))
