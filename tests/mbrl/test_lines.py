"""The line-by-line torso (`mbrl.networks.lines`): which cells each feature block reads."""

import pytest
import torch

from mbrl.networks.lines import LineEncoder


def blocks(features: torch.Tensor, size: int) -> list[torch.Tensor]:
    """The encoder's output ``[B, 4 N h]`` as its four groups ``[B, N, h]``: rows forward, rows
    backward, columns forward, columns backward."""
    return list(features.view(features.shape[0], 4, size, -1).unbind(1))


def test_transposing_the_board_swaps_the_row_and_column_features():
    torch.manual_seed(0)
    encoder = LineEncoder(3, 4, 4, hidden=5)
    board = torch.rand(2, 3, 4, 4)
    rows, rows_back, columns, columns_back = blocks(encoder(board), 4)
    t_rows, t_rows_back, t_columns, t_columns_back = blocks(encoder(board.transpose(2, 3)), 4)
    torch.testing.assert_close(t_rows, columns)
    torch.testing.assert_close(t_rows_back, columns_back)
    torch.testing.assert_close(t_columns, rows)
    torch.testing.assert_close(t_columns_back, rows_back)


def test_mirroring_the_board_reverses_the_rows_and_reorders_the_columns():
    torch.manual_seed(0)
    encoder = LineEncoder(2, 4, 4, hidden=3)
    board = torch.rand(1, 2, 4, 4)
    rows, rows_back, columns, columns_back = blocks(encoder(board), 4)
    m_rows, m_rows_back, m_columns, m_columns_back = blocks(encoder(board.flip(3)), 4)
    torch.testing.assert_close(m_rows, rows_back)  # a row read left to right, mirrored
    torch.testing.assert_close(m_rows_back, rows)
    torch.testing.assert_close(m_columns, columns.flip(1))  # the same columns, last first
    torch.testing.assert_close(m_columns_back, columns_back.flip(1))


def test_a_feature_depends_only_on_its_own_line():
    torch.manual_seed(0)
    encoder = LineEncoder(2, 4, 4, hidden=3)
    board = torch.rand(1, 2, 4, 4)
    changed = board.clone()
    changed[0, :, 2, 1] += 1.0  # the cell in row 2, column 1
    before, after = blocks(encoder(board), 4), blocks(encoder(changed), 4)
    for group, line in ((0, 2), (1, 2), (2, 1), (3, 1)):  # row 2 both ways, column 1 both ways
        same = torch.ones(4, dtype=torch.bool)
        same[line] = False
        torch.testing.assert_close(after[group][:, same], before[group][:, same])
        assert not torch.allclose(after[group][:, line], before[group][:, line])


def test_only_square_boards():
    with pytest.raises(ValueError, match=r"square board.*got 6x7"):
        LineEncoder(2, 6, 7, hidden=4)
    assert LineEncoder(10, 4, 4, hidden=8).out_features == 4 * 4 * 8
