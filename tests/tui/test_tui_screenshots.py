"""SVG screenshots of the browse screen's views and its error state, on the demo at a fixed time.

Look at the SVGs when they change (`rsvg-convert -o x.png x.svg`). Nothing in them varies
between runs: fixed clock, fixed backend URL, the real server app in-process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from starlette.types import ASGIApp
from textual.pilot import Pilot

from ckpt_tui.tui.screens.download_dialog import DownloadDialog
from tests.support.faulty_app import FaultyApp
from tests.support.screenshots import SnapCompare, steady_cursors
from tests.support.tui import pictured_demo, settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 36), id="120x36")]
VIEWS = [
    pytest.param("1", id="by-run"),
    pytest.param("2", id="all"),
    pytest.param("3", id="expiring"),
]


def loaded_then(*keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """A `run_before` that waits for the first load, presses `keys`, and waits again."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("key", VIEWS)
def test_view(snap_compare: SnapCompare, tmp_path: Path, key: str, size: tuple[int, int]) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        assert snap_compare(app, run_before=loaded_then(key), terminal_size=size)


def refusing_everything(server: ASGIApp) -> ASGIApp:
    """Every call answers 401 (not retried by the client, so the error shows at once)."""
    faulty = FaultyApp(server)
    faulty.fail_first(1_000_000, status=401)
    return faulty


@pytest.mark.parametrize("size", SIZES)
def test_backend_error(snap_compare: SnapCompare, tmp_path: Path, size: tuple[int, int]) -> None:
    with pictured_demo(tmp_path / "demo", wrap=refusing_everything) as app:
        assert snap_compare(app, run_before=loaded_then(), terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_two_backends(snap_compare: SnapCompare, tmp_path: Path, size: tuple[int, int]) -> None:
    """`ckpt-tui demo`'s two backends: runs grouped under each backend's row, the header's
    totals for both and each one's state. (The all-checkpoints view over both, with its
    Backend column, is checked in test_tui_fleet.py and shown in the screenshots.)"""
    with pictured_demo(tmp_path / "demo", with_box=True) as app:
        assert snap_compare(app, run_before=loaded_then("1"), terminal_size=size)


async def download_asked(pilot: Pilot[None]) -> None:
    """The first load, then D on the highlighted checkpoint, once the dialog has asked the
    backend which types it signs."""
    await settle(pilot)
    await pilot.press("D")
    for _ in range(500):
        screen = pilot.app.screen
        if isinstance(screen, DownloadDialog) and screen.ready is not None:
            break
        await pilot.pause(0.01)
    steady_cursors(pilot)
    await pilot.pause()


def test_download_dialog(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """D: the folder box (the current one), where the checkpoint goes, the total."""
    with pictured_demo(tmp_path / "demo") as app:
        assert snap_compare(app, run_before=download_asked, terminal_size=(120, 36))
