"""SVG screenshots of each dialog at fixed times (look at the SVGs when they change)."""

from __future__ import annotations

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog
from ckpt_tui.tui.screens.publish_dialog import PublishDialog
from ckpt_tui.tui.screens.session_log_dialog import SessionLogDialog
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog
from tests.support.dialogs import (
    NOW,
    WHERE,
    DialogApp,
    ckpt,
    flagged,
    many_rows,
    public_and_private,
    rows_of,
    sample_log,
)
from tests.support.screenshots import SnapCompare, pressing


def mixed_rows() -> list[CheckpointRow]:
    """Past, future and never expiries; a name with brackets; a long run name."""
    rows = rows_of(
        ckpt("000100", -5),
        ckpt("000200", 48),
        ckpt("[final]", None),
        ckpt("sampler-with-a-rather-long-name-000300", 2, run="run-with-a-long-name-b"),
    )
    return [*rows[:2], flagged(rows[2], final=True), rows[3]]


def risky_rows() -> list[CheckpointRow]:
    rows = rows_of(ckpt("final", None), ckpt("000300", 5), ckpt("pub", 5, public=True))
    return [flagged(rows[0], final=True), flagged(rows[1], resume=True), rows[2]]


def test_ttl_with_preview(snap_compare: SnapCompare) -> None:
    app = DialogApp(lambda: TtlDialog([*mixed_rows(), *many_rows(9)], NOW, WHERE))
    assert snap_compare(app, run_before=pressing("2"), terminal_size=(120, 36))


def test_ttl_refusing_a_typed_value_small(snap_compare: SnapCompare) -> None:
    app = DialogApp(lambda: TtlDialog(mixed_rows(), NOW, WHERE))
    assert snap_compare(app, run_before=pressing(*"5m"), terminal_size=(80, 24))


def test_ttl_many_rows_small(snap_compare: SnapCompare) -> None:
    app = DialogApp(lambda: TtlDialog(many_rows(12), NOW, WHERE))
    assert snap_compare(app, terminal_size=(80, 24))


def test_delete_small_safe_set(snap_compare: SnapCompare) -> None:
    app = DialogApp(
        lambda: DeleteDialog(rows_of(ckpt("000100", 5), ckpt("000200", 48)), 0, NOW, WHERE)
    )
    assert snap_compare(app, terminal_size=(80, 24))


def test_delete_with_warnings_and_typed_word(snap_compare: SnapCompare) -> None:
    app = DialogApp(lambda: DeleteDialog([*risky_rows(), *many_rows(9)], 3, NOW, WHERE))
    assert snap_compare(app, terminal_size=(120, 36))


def test_delete_typed_word_after_y_small(snap_compare: SnapCompare) -> None:
    app = DialogApp(lambda: DeleteDialog([*risky_rows(), *many_rows(9)], 3, NOW, WHERE))
    assert snap_compare(app, run_before=pressing(*"dele"), terminal_size=(80, 24))


def test_publish(snap_compare: SnapCompare) -> None:
    app = DialogApp(lambda: PublishDialog(public_and_private(3, 5), WHERE, NOW))
    assert snap_compare(app, terminal_size=(80, 24))


def test_session_log(snap_compare: SnapCompare) -> None:
    app = DialogApp(lambda: SessionLogDialog(sample_log(), NOW))
    assert snap_compare(app, terminal_size=(120, 36))
