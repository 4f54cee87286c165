"""Shared pieces of the dialog tests (rows at a fixed time, a host app); pure helpers tested."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, Generic, TypeVar

from msgspec.structs import replace
from rich.console import Console
from textual import work
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog import CheckpointRow, build_catalog
from ckpt_tui.tui.screens.delete_dialog import freed_text, needs_typed_word, warnings
from ckpt_tui.tui.screens.publish_dialog import question
from ckpt_tui.tui.session_log import LogEntry, LogItem, SessionLog

NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)
BACKEND = "local store /data/ckpts"
"""The backend a dialog names (dialogs show it as given)."""
RUN = "run-a"
GiB = 1024**3
R = TypeVar("R")


def ckpt(
    name: str,
    expires_in_h: float | None,
    size: int | None = GiB,
    public: bool = False,
    run: str = RUN,
) -> Checkpoint:
    """A training checkpoint made 2 days before NOW, expiring `expires_in_h` after NOW."""
    return Checkpoint(
        checkpoint_id=f"weights/{name}",
        checkpoint_type="training",
        time=NOW - timedelta(days=2),
        tinker_path=f"tinker://{run}/weights/{name}",
        size_bytes=size,
        public=public,
        expires_at=None if expires_in_h is None else NOW + timedelta(hours=expires_in_h),
    )


def rows_of(*checkpoints: Checkpoint) -> list[CheckpointRow]:
    """Rows joined by the real catalog code (no log dirs: the run is named by its id)."""
    run_ids = sorted({c.run_id for c in checkpoints})
    runs = [
        TrainingRun(run_id, "Qwen/Qwen3-8B", "me", True, NOW, lora_rank=32) for run_id in run_ids
    ]
    by_path = {row.tinker_path: row for row in build_catalog(runs, list(checkpoints), []).rows}
    return [by_path[c.tinker_path] for c in checkpoints]


def changed(row: CheckpointRow, **values: Any) -> CheckpointRow:
    """A copy of a row with some attributes set (rows are built only by the join)."""
    return replace(row, **values)


def flagged(row: CheckpointRow, *, final: bool = False, resume: bool = False) -> CheckpointRow:
    """The row as a training log would mark it (final / resume point)."""
    return changed(row, final=final, resume_point=resume)


def many_rows(count: int) -> list[CheckpointRow]:
    return rows_of(*(ckpt(f"{step:06d}", 24.0 * (step + 1)) for step in range(count)))


def public_and_private(public: int, private: int) -> list[CheckpointRow]:
    """`public` public checkpoints, then `private` private ones."""
    count = public + private
    return rows_of(*(ckpt(f"{step:06d}", 24.0, public=step < public) for step in range(count)))


class DialogApp(App[None], Generic[R]):
    """Opens one dialog on mount by `push_screen_wait` (as the actions do); keeps the results."""

    def __init__(self, make: Callable[[], Screen[R]]) -> None:
        super().__init__()
        self.make = make
        self.results: list[R] = []

    def compose(self) -> ComposeResult:
        yield Static("ckpt-tui (behind the dialog)")

    def on_mount(self) -> None:
        self.open_dialog()

    @work
    async def open_dialog(self) -> None:
        self.results.append(await self.push_screen_wait(self.make()))


def shown_text(widget: Static) -> str:
    """The plain text a Static shows (rendered 200 columns wide, so nothing is cut)."""
    console = Console(width=200, color_system=None)
    with console.capture() as capture:
        console.print(widget.content, markup=False)
    return capture.get()


def static_text(app: App[Any], selector: str) -> str:
    """The plain text of one Static of the open dialog."""
    return shown_text(app.screen.query_one(selector, Static))


def screen_text(app: App[Any]) -> str:
    """The plain text of every Static (and Label) of the open dialog, top to bottom."""
    return "".join(shown_text(widget) for widget in app.screen.query(Static) if widget.display)


# --- pure helpers ------------------------------------------------------------------------------
def test_warnings_name_each_risk_and_the_hidden_count() -> None:
    rows = rows_of(ckpt("a", 5), ckpt("b", 5, public=True), ckpt("c", None))
    rows = [flagged(rows[0], final=True), rows[1], flagged(rows[2], resume=True)]
    lines = warnings(rows, hidden_count=3)
    assert lines == [
        "⚠ 1 is a final checkpoint: the end result of a run",
        "⚠ 1 is a resume point: training resumes from it",
        "⚠ 1 is public: others may be using it",
        "⚠ 3 of these are hidden by the current filter",
    ]
    assert warnings(rows_of(ckpt("a", 5)), 0) == []


def test_typed_word_needed_for_risky_or_more_than_ten() -> None:
    assert not needs_typed_word(many_rows(10))
    assert needs_typed_word(many_rows(11))
    assert needs_typed_word(rows_of(ckpt("p", 5, public=True)))
    assert needs_typed_word([flagged(rows_of(ckpt("f", 5))[0], final=True)])


def test_freed_total_says_at_least_when_a_size_is_unknown() -> None:
    exact = rows_of(ckpt("a", 5, size=GiB), ckpt("b", 5, size=GiB))
    assert freed_text(exact).plain == "Frees 2.0 GiB. This cannot be undone."
    # one size unknown: the catalog estimates it from the run's measured ones
    partial = rows_of(ckpt("a", 5, size=GiB), ckpt("b", 5, size=None))
    assert freed_text(partial).plain.startswith("Frees ≈ 2.0 GiB")


def test_publish_question_counts_both_sides() -> None:
    expected = "3 of these are public and 5 are private: publish the 5, or unpublish the 3?"
    assert question(3, 5) == expected
    assert question(1, 1).startswith("1 of these is public and 1 is private")


def test_session_log_keeps_entries_in_order() -> None:
    log = SessionLog()
    first = LogEntry(NOW, "ttl", "Extended 2", [LogItem("tinker://a/weights/x", "a", True)])
    second = LogEntry(NOW + timedelta(minutes=1), "delete", "Deleted 0 of 1; 1 failed")
    second.items.append(LogItem("tinker://a/weights/y", "a", False, "404 not found"))
    log.add(first)
    log.add(second)
    assert log.entries == [first, second] and log.newest_first() == [second, first]
    assert second.failed == [LogItem("tinker://a/weights/y", "a", False, "404 not found")]
    assert first.ok_count == 1 and second.ok_count == 0
