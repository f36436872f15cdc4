"""Board symmetries: each declared transform maps the game tree onto itself, checked against the
real rules: play a random game, play its transformed moves from the start, and the transformed
position must be the one the transform predicts (observation and legal moves)."""

import numpy as np
import pytest

from games import BoardGame
from games.symmetry import GAME_SYMMETRIES, BoardSymmetries, board_symmetries

GAMES = {
    "tic_tac_toe": {},
    "connect_four": {},
    "othello": {},
    "go": {"board_size": 5},
}


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_declared_transform_is_a_symmetry_of_the_rules(name):
    game = BoardGame(name, GAMES[name])
    symmetries = board_symmetries(name, game.obs_shape, game.num_actions)
    assert symmetries is not None and symmetries.names == GAME_SYMMETRIES[name]
    rng = np.random.default_rng(0)
    for g in range(len(symmetries)):
        for _ in range(3):
            state, image = game.new_state(), game.new_state()
            for _ in range(int(rng.integers(0, 12))):
                if state.is_terminal():
                    break
                action = int(rng.choice(np.flatnonzero(game.legal_mask(state))))
                state.apply_action(action)
                image.apply_action(int(symmetries.action_images[g, action]))
            batch = {
                "obs": game.observation(state)[None],
                "legal": game.legal_mask(state)[None],
            }
            expected = _under(symmetries, g, batch)
            np.testing.assert_array_equal(expected["obs"][0], game.observation(image))
            np.testing.assert_array_equal(expected["legal"][0], game.legal_mask(image))


def _under(symmetries: BoardSymmetries, g: int, batch: dict) -> dict:
    """``batch`` under transform ``g`` (augment with a generator that always draws ``g``)."""

    class Fixed:
        def integers(self, low, high, size):
            return np.full(size, g)

    return symmetries.augment(batch, Fixed())


def test_actions_and_policies_move_together():
    """The played action's policy mass follows it, and each sample gets its own transform."""
    symmetries = board_symmetries("tic_tac_toe", (3, 3, 3), 9)
    rng = np.random.default_rng(1)
    count = 64
    actions = rng.integers(0, 9, size=(count, 2))
    policy = np.zeros((count, 3, 9), np.float32)
    policy[np.arange(count), 0, actions[:, 0]] = 1.0
    obs = np.zeros((count, 3, 3, 3), np.float32)
    obs.reshape(count, 3, 9)[np.arange(count), 1, actions[:, 0]] = 1.0  # a stone on that cell
    out = symmetries.augment(
        {"obs": obs, "policy": policy, "actions": actions, "value": np.ones(count)}, rng
    )
    moved = out["actions"][:, 0]
    assert (out["policy"][np.arange(count), 0, moved] == 1.0).all()
    assert (out["obs"].reshape(count, 3, 9)[np.arange(count), 1, moved] == 1.0).all()
    assert (out["value"] == 1).all()
    images = {(a, m) for a, m in zip(actions[:, 0].tolist(), moved.tolist(), strict=True)}
    assert len(images) > len(set(actions[:, 0].tolist()))  # per-sample transforms, not one


def test_bad_declarations_are_refused():
    assert board_symmetries("chess", (20, 8, 8), 4674) is None
    assert board_symmetries("hex", (10, 11, 11), 121) is None
    with pytest.raises(ValueError, match="do not map columns to columns"):
        BoardSymmetries((3, 3, 3), 3, ("identity", "transpose"))
    with pytest.raises(ValueError, match="change the shape"):
        BoardSymmetries((3, 6, 7), 42, ("transpose",))
    with pytest.raises(ValueError, match="neither"):
        BoardSymmetries((3, 3, 3), 10 + 1, ("identity",))
    with pytest.raises(ValueError, match="unknown board transforms"):
        BoardSymmetries((3, 3, 3), 9, ("spin",))
