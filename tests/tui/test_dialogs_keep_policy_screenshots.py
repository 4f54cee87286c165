"""SVG screenshots of the keep-policy dialog with a preview (look at the SVGs when they change)."""

from __future__ import annotations

from tests.support.keep_policy_dialog import dialog_app
from tests.support.screenshots import SnapCompare, pressing


def test_keep_last_two_with_costs_small(snap_compare: SnapCompare) -> None:
    app = dialog_app(rate=0.1)
    assert snap_compare(app, run_before=pressing("2"), terminal_size=(80, 24))


def test_keep_last_one_over_all_runs(snap_compare: SnapCompare) -> None:
    app = dialog_app(rate=0.1)
    keys = pressing("1", "shift+tab", "space")  # the all-runs box comes before Keep last
    assert snap_compare(app, run_before=keys, terminal_size=(120, 36))


def test_a_field_error_small(snap_compare: SnapCompare) -> None:
    app = dialog_app()
    assert snap_compare(app, run_before=pressing("0"), terminal_size=(80, 24))
