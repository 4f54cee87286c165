"""The loss curve drawn in the details pane."""

from __future__ import annotations

from ckpt_tui.tui.view.sparkline import BLOCKS, pick_series, sparkline


def test_decreasing_loss_goes_from_the_top_block_to_the_bottom_one() -> None:
    points = [(step, 10.0 - step) for step in range(10)]
    line = sparkline(points, 10, mark_step=None)
    assert line.text[0] == BLOCKS[-1] and line.text[-1] == BLOCKS[0]
    assert len(line.text) == 10 and line.marker is None
    assert (line.low, line.high) == (1.0, 10.0)


def test_the_marked_step_lands_in_its_column() -> None:
    points = [(step, 1.0) for step in range(0, 1001, 10)]
    line = sparkline(points, 50, mark_step=500)
    assert line.marker == 25 and len(line.text) == 50
    assert sparkline(points, 50, mark_step=5000).marker is None


def test_sparse_points_keep_columns_aligned_with_steps() -> None:
    line = sparkline([(0, 3.0), (100, 1.0)], 40, mark_step=100)
    assert len(line.text) == 2 and line.marker == 1


def test_series_choice_prefers_loss_names() -> None:
    assert pick_series({"lr": [(0, 1.0)], "train_loss": [(0, 1.0)]}) == "train_loss"
    assert pick_series({"lr": [(0, 1.0)], "policy_loss_x": [(0, 2.0)]}) == "policy_loss_x"
    assert pick_series({"lr": [(0, 1.0)]}) is None
