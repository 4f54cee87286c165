"""Helpers for driving the real app with Pilot against a real server."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import httpx
from starlette.types import ASGIApp
from textual.pilot import Pilot

from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.client import Backend, CheckpointClient
from ckpt_tui.clock import FixedClock
from ckpt_tui.demo import DEFAULT_SEED, build_demo
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.main import MainScreen
from ckpt_tui.tui.widgets import FastTable


def make_app(url: str, logs: Path, clock: FixedClock, **options: object) -> CkptApp:
    """The app on a server URL and a log folder, with no polling unless asked."""
    settings = LogDirSettings((logs,), runs_root=None)
    options.setdefault("poll_interval", 0.0)
    return CkptApp(Backend.remote(url), settings, clock=clock, **options)  # type: ignore[arg-type]


PICTURE_TIME = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
"""The fixed "now" of screenshots and snapshot tests."""
PICTURE_URL = "http://demo.ckpt-tui.test"
"""The backend URL pictures show: requests never leave the process (an ASGI transport)."""


@contextmanager
def pictured_demo(
    root: Path, wrap: Callable[[ASGIApp], ASGIApp] | None = None, seed: int = DEFAULT_SEED
) -> Iterator[CkptApp]:
    """The app on the demo with nothing that varies between runs: no temp path, port or "now".

    The demo is built under `root` at PICTURE_TIME and served by the real server app
    in-process; `wrap` may put e.g. a FaultyApp in front of it.
    """
    clock = FixedClock(PICTURE_TIME)
    paths = build_demo(root, seed, clock)
    store = Store.open(paths.store, clock)
    try:
        server: ASGIApp = create_app(store, sweep_interval=None)
        transport = httpx.ASGITransport(app=wrap(server) if wrap else server)
        settings = LogDirSettings((paths.logs,), runs_root=None)
        backend = Backend.remote(PICTURE_URL)

        async def connect() -> CheckpointClient:
            return CheckpointClient(backend, transport=transport)

        yield CkptApp(backend, settings, clock=clock, poll_interval=0.0, connect=connect)
    finally:
        store.close()


async def settle(pilot: Pilot[None]) -> None:
    """Wait until every worker is done and the screen has caught up.

    Not while a dialog is open: the worker that opened it waits for its answer.
    """
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def show_all_checkpoints(pilot: Pilot[None]) -> None:
    """Wait for the first load, then switch to the all-checkpoints view (key 2)."""
    await settle(pilot)
    await pilot.press("2")
    await settle(pilot)


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


async def highlight(pilot: Pilot[None], app: CkptApp, wanted: CheckpointRow) -> None:
    """Show every checkpoint and move the cursor onto `wanted`."""
    await pilot.press("2")
    await settle(pilot)
    assert checkpoints(app).move_cursor_to_key(wanted.tinker_path)
    await pilot.pause()


async def loaded_on(
    pilot: Pilot[None], app: CkptApp, run: str, name: str, kind: str
) -> CheckpointRow:
    """After the first load, the cursor on one checkpoint in the all-checkpoints view."""
    await settle(pilot)
    row = find(app, run, name, kind)
    await highlight(pilot, app, row)
    return row


def find(app: CkptApp, run: str, name: str, kind: str) -> CheckpointRow:
    catalog = screen_of(app).catalog
    assert catalog is not None
    return next(
        row for row in catalog.rows if row.run_name == run and row.name == name and row.kind == kind
    )
