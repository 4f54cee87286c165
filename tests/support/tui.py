"""Helpers for driving the real app with Pilot against a real server."""

from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import httpx
from starlette.types import ASGIApp
from textual.app import App
from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from ckpt_tui.backends import Backend, Connection
from ckpt_tui.backends.fleet_view import row_key
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli.clients import client_for
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.demo import DEFAULT_SEED, build_demo
from ckpt_tui.demo.bucket import bucket_location
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.store.bucket.opening import open_bucket_store
from ckpt_tui.timekeeping.clock import Clock, FixedClock
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse.feed_screen import FeedScreen
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.view.groups import RunsEntry
from ckpt_tui.tui.widgets import FastTable


def connection(
    where: str | Endpoint,
    name: str = "demo",
    *,
    readonly: bool = False,
    storage_rate: float | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Connection:
    """A named backend and its own client: a server URL, or a client Endpoint (e.g. local)."""
    backend = Endpoint.remote(where) if isinstance(where, str) else where
    if backend.local_place is not None:
        kind, location = "local", backend.local_place
    else:
        kind, location = "url", backend.base_url
    descriptor = Backend(name, kind, location, readonly, storage_rate)  # type: ignore[arg-type]
    # A local store opens here, as `ls` opens it (the app's opens on its first request:
    # tests/tui/test_tui_startup.py).
    if transport is None:
        client = client_for(backend, readonly=readonly)
    else:
        client = CheckpointClient(backend, transport=transport, readonly=readonly)
    return Connection(descriptor, client)


class PatientApp(CkptApp):
    """The app, with notices that stay up for an hour: a test reads a notice after awaiting
    work that on a busy machine can take longer than the 5 s a notice stays by default."""

    NOTIFICATION_TIMEOUT = 3600.0


def app_on(
    connections: list[Connection], logs: Path | None, clock: Clock, **options: object
) -> CkptApp:
    """The app on some backends and a log folder, with no polling unless asked."""
    settings = LogDirSettings((logs,) if logs else (), runs_root=None)
    options.setdefault("poll_interval", 0.0)
    return PatientApp(connections, settings, clock=clock, **options)  # type: ignore[arg-type]


def make_app(
    url: str,
    logs: Path,
    clock: FixedClock,
    *,
    readonly: bool = False,
    storage_rate: float | None = None,
    **options: object,
) -> CkptApp:
    """The app on a server URL and a log folder, with no polling unless asked."""
    only = connection(url, readonly=readonly, storage_rate=storage_rate)
    return app_on([only], logs, clock, **options)


PICTURE_TIME = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
"""The fixed "now" of screenshots and screenshot tests."""
PICTURE_URL = "http://demo.ckpt-tui.test"
"""The backend URL pictures show: requests never leave the process (an ASGI transport)."""
PICTURE_BOX_URL = "http://gpu-box.ckpt-tui.test"
"""The demo's training box, as pictures show it (served in-process too)."""
PICTURE_BUCKET_URL = "http://team-bucket.ckpt-tui.test"
"""The demo's bucket, as pictures show it (read through obstore, served in-process)."""


@contextmanager
def pictured_demo(
    root: Path,
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
    seed: int = DEFAULT_SEED,
    *,
    with_box: bool = False,
    with_bucket: bool = False,
) -> Iterator[CkptApp]:
    """The app on the demo with nothing that varies between runs: no temp path, port or "now".

    The demo is built under `root` at PICTURE_TIME and served by the real server app
    in-process; `wrap` may put e.g. a FaultyApp in front of it. `with_box`: the demo's second
    backend too, its training box (`gpu-box`), as `ckpt-tui demo` opens both; `with_bucket`:
    the third, its bucket (`team-bucket`, read through the object-store code).
    """
    clock = FixedClock(PICTURE_TIME)
    paths = build_demo(root, seed, clock)
    with ExitStack() as stack:
        store = stack.enter_context(Store.open(paths.store, clock))
        server: ASGIApp = create_app(store, sweep_interval=None)
        transport = httpx.ASGITransport(app=wrap(server) if wrap else server)
        connections = [connection(PICTURE_URL, "tinker-demo", transport=transport)]
        if with_box:  # browsing a folder of Trainer saves writes nothing into it
            box = stack.enter_context(Store.open(paths.box, clock, create=False, lazy=True))
            served = httpx.ASGITransport(app=create_app(box, sweep_interval=None))
            connections.append(connection(PICTURE_BOX_URL, "gpu-box", transport=served))
        if with_bucket:
            url = bucket_location(paths.bucket)
            bucket = stack.enter_context(open_bucket_store(url, clock=clock))
            served = httpx.ASGITransport(app=create_app(bucket, sweep_interval=None))
            connections.append(connection(PICTURE_BUCKET_URL, "team-bucket", transport=served))
        yield app_on(connections, paths.logs, clock)


SETTLE_ROUNDS = 20
"""At most this many rounds of waiting for workers (handlers that start work each time)."""


async def settle(pilot: Pilot[None]) -> None:
    """Wait until every worker is done and the screen has caught up.

    Not while a dialog is open: the worker that opened it waits for its answer.

    Workers report back with messages, whose handlers may start more work (a finished
    load asks for metrics), and a key's binding can run before a message already queued
    for the screen: so it waits, a bounded number of rounds, until no worker runs and the
    browse screen shows what every load sent (none is loading, no pages wait to be shown).
    """
    app = pilot.app
    for _ in range(SETTLE_ROUNDS):
        # A worker that a newer one of its group replaced (exclusive) ends cancelled: it is
        # done all the same, and the next round waits for the rest.
        with contextlib.suppress(WorkerCancelled):
            await app.workers.wait_for_complete()
        await pilot.pause()
        if not busy(app):
            break
    await pilot.pause()


def busy(app: App[Any]) -> bool:
    """Work is running, or a load's results are not on screen yet."""
    if any(worker.is_running for worker in app.workers):
        return True
    feeds = [screen for screen in app.screen_stack if isinstance(screen, FeedScreen)]
    if not feeds:
        return isinstance(app, CkptApp)  # its browse screen is not up yet
    feed = feeds[0]
    loading = any(state.loading for state in feed.fleet.states)
    return bool(feed.fetching) or feed.refresh_due or feed.complete_due or loading


async def show_all_checkpoints(pilot: Pilot[None]) -> None:
    """Wait for the first load, then switch to the all-checkpoints view (key 2)."""
    await settle(pilot)
    await pilot.press("2")
    await settle(pilot)


def screen_of(app: CkptApp) -> BrowseScreen:
    screen = app.screen
    assert isinstance(screen, BrowseScreen)
    return screen


def backend_error(app: CkptApp, backend: str | None = None) -> str | None:
    """What the backend (the first one unless named) failed with, if its last load failed."""
    fleet = screen_of(app).fleet
    return (fleet.state(backend) if backend else fleet.states[0]).error


def sort_key(app: CkptApp) -> str:
    return screen_of(app).state.sort.key


def checkpoints(app: CkptApp) -> FastTable[CheckpointRow]:
    return screen_of(app).checkpoints_table


def runs(app: CkptApp) -> FastTable[RunSummary]:
    """The runs pane of an app on one backend: only runs (no backend rows)."""
    assert len(app.connections) == 1, "with several backends, use runs_pane()"
    return cast("FastTable[RunSummary]", screen_of(app).runs_table)


def runs_pane(app: CkptApp) -> FastTable[RunsEntry]:
    """The runs pane: with several backends, a row per backend above its runs."""
    return screen_of(app).runs_table


def shown(app: CkptApp) -> list[CheckpointRow]:
    return list(checkpoints(app).rows)


def screen_text(app: App[Any]) -> str:
    """Everything on screen as plain text (for checks that user text shows literally)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def screen_line(app: App[Any], containing: str) -> str:
    """The one screen line that shows `containing` (a check that text does not wrap)."""
    lines = [line for line in screen_text(app).splitlines() if containing in line]
    assert len(lines) == 1, f"{containing!r} is on {len(lines)} screen lines"
    return lines[0]


def shows_path(shown: str, path: str) -> bool:
    """Whether `shown` is `path` whole, or shortened in the middle to fit: its start and its
    end around '…'. What a test of a temp path may check: its length varies by machine."""
    if shown == path:
        return True
    head, ellipsis, tail = shown.partition("…")
    fits = len(head) + len(tail) < len(path)
    return bool(ellipsis and tail) and fits and path.startswith(head) and path.endswith(tail)


async def highlight(pilot: Pilot[None], app: CkptApp, wanted: CheckpointRow) -> None:
    """Show every checkpoint and move the cursor onto `wanted`."""
    await pilot.press("2")
    await settle(pilot)
    assert checkpoints(app).move_cursor_to_key(row_key(wanted))
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
