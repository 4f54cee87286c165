"""Helpers for driving the real app with Pilot against a real server."""

from __future__ import annotations

import html
import re
from pathlib import Path

from textual.pilot import Pilot

from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.client import Backend
from ckpt_tui.clock import FixedClock
from ckpt_tui.loader import LogDirSettings
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.main import MainScreen
from ckpt_tui.tui.widgets import FastTable


def make_app(url: str, logs: Path, clock: FixedClock, **options: object) -> CkptApp:
    """The app on a server URL and a log folder, with no polling unless asked."""
    settings = LogDirSettings((logs,), runs_root=None)
    options.setdefault("poll_interval", 0.0)
    return CkptApp(Backend.remote(url), settings, clock=clock, **options)  # type: ignore[arg-type]


async def settle(pilot: Pilot[None]) -> None:
    """Wait until every worker is done and the screen has caught up.

    Not while a dialog is open: the worker that opened it waits for its answer.
    """
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def screen_of(app: CkptApp) -> MainScreen:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


def sort_key(app: CkptApp) -> str:
    return screen_of(app).state.sort.key


def checkpoints(app: CkptApp) -> FastTable[CheckpointRow]:
    return screen_of(app).checkpoints_table


def runs(app: CkptApp) -> FastTable[RunSummary]:
    return screen_of(app).runs_table


def shown(app: CkptApp) -> list[CheckpointRow]:
    return list(checkpoints(app).rows)


def screen_text(app: CkptApp) -> str:
    """Everything on screen as plain text (for checks that user text shows literally)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
