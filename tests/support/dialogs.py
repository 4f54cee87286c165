"""Shared pieces of the dialog tests: rows at a fixed time, a host app, a sample session log."""

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

from ckpt_tui.actions.session_log import LogEntry, LogItem, SessionLog
from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog import CheckpointRow, build_catalog
from ckpt_tui.tui.app import STYLESHEET

NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)
BACKEND = "local store /data/ckpts"
WHERE = f"on {BACKEND}"
"""What a confirming dialog says it acts on (one backend)."""
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
    """Opens one dialog on mount by `push_screen_wait` (as the actions do); keeps the results.

    It styles the dialog with the app's own stylesheet, where the dialogs' rules are.
    """

    CSS_PATH = STYLESHEET

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


def sample_log() -> SessionLog:
    """Three actions; the delete failed on two checkpoints (one with brackets in its name)."""
    log = SessionLog()
    log.add(
        LogEntry(
            NOW - timedelta(minutes=9),
            "publish",
            "Published 2",
            [
                LogItem("tinker://run-a/sampler_weights/final", "sl/run-a", True),
                LogItem("tinker://run-a/sampler_weights/000100", "sl/run-a", True),
            ],
            "local store /data/ckpts",
        )
    )
    items = [LogItem(f"tinker://run-b/weights/{n:06d}", "run-b", True) for n in range(38)]
    items += [
        LogItem("tinker://run-b/weights/[bold]odd[/bold]", "run-b", False, "404: not found"),
        LogItem("tinker://run-b/weights/000999", "run-b", False, "409: [conflict] in use"),
    ]
    log.add(LogEntry(NOW - timedelta(minutes=3), "delete", "Deleted 38 of 40; 2 failed", items))
    log.add(
        LogEntry(
            NOW - timedelta(seconds=30),
            "ttl",
            "Extend by 7 days: 1 checkpoint",
            [LogItem("tinker://run-a/weights/000100", "sl/run-a", True)],
        )
    )
    return log
