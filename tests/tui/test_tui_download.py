"""`D` downloads the highlighted or marked checkpoints from the TUI, against a real server:
it asks where and shows the total first, shows progress for the whole and per file while
the user keeps browsing, can be stopped (and resumed with `D`), and says before starting
why a checkpoint its backend cannot sign cannot be downloaded."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from ckpt_tui.api_types import CheckpointType
from ckpt_tui.server import create_app
from ckpt_tui.server.signing import UrlSigner
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.download_dialog import DownloadDialog
from ckpt_tui.tui.screens.quit_dialog import QuitDialog, StopDialog
from tests.support.file_tap import FileTap
from tests.support.live_server import run_server
from tests.support.tui import checkpoints, make_app, screen_text, settle
from tests.support.waiting import until

MiB = 1024 * 1024
FILES = {
    "big.bin": os.urandom(3 * MiB),
    "sub/config.json": b'{"a": 1}',
}
FOLDER = "run-1_external_weights_final"


@pytest.fixture
def served(store: Store) -> Iterator[tuple[str, FileTap]]:
    """run-1 with an external checkpoint `final` (FILES) and a training checkpoint `w1`."""
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "external_weights/final", FILES)
    store.add_checkpoint("run-1", "weights/w1", {"adapter.bin": b"x" * 16})
    tap = FileTap(create_app(store, sweep_interval=None, url_signer=UrlSigner(600)))
    with run_server(tap) as url:
        yield url, tap


def words_on_screen(app: CkptApp) -> str:
    """The screen's words in order, frames and line ends left out (text wrapped in a dialog
    reads as one line, wherever a machine's port or path length wraps it)."""
    return " ".join(re.sub(r"[│▕▏┃]", " ", screen_text(app)).split())


def held(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


async def on_row(pilot: Pilot[None], app: CkptApp, name: str) -> None:
    """All checkpoints, cursor moved down (j) onto the one named `name`."""
    await settle(pilot)
    await pilot.press("2")
    await settle(pilot)
    for _ in range(len(checkpoints(app).rows)):
        row = checkpoints(app).cursor_value
        if row is not None and row.name == name:
            return
        await pilot.press("j")
    raise AssertionError(f"{name} is not listed")


async def into(pilot: Pilot[None], folder: str) -> None:
    """Replace the dialog's folder (".") with `folder`, typed."""
    await pilot.press("backspace", *folder)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app runs in `tmp_path`: a relative folder typed goes there (and is short)."""
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("readonly", [False, True])
async def test_D_asks_where_shows_the_total_and_downloads(
    served: tuple[str, FileTap], clock: FixedClock, tmp_path: Path, readonly: bool
) -> None:
    """Also in read-only mode: a download changes nothing on the backend."""
    url, _ = served
    app = make_app(url, tmp_path, clock, readonly=readonly)
    async with app.run_test(size=(120, 36)) as pilot:
        await on_row(pilot, app, "final")
        await pilot.press("D")
        await settle(pilot)
        assert isinstance(app.screen, DownloadDialog)
        text = screen_text(app)
        assert f"→ ./{FOLDER}/" in text  # the default, as the official CLI names it
        assert "Total: 1 checkpoint · 3.0 MiB" in text
        await into(pilot, "got")
        assert f"→ got/{FOLDER}/" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert held(tmp_path / "got" / FOLDER) == FILES
        assert any("Downloaded 1 of 1" in n.message for n in app._notifications)


async def test_a_checkpoint_its_backend_cannot_sign_says_why_before_anything_starts(
    store: Store, clock: FixedClock, tmp_path: Path
) -> None:
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "weights/w1", {"adapter.bin": b"x" * 16})
    hosted: tuple[CheckpointType, ...] = ("external",)  # as the hosted service signs
    with run_server(create_app(store, sweep_interval=None, signed_types=hosted)) as url:
        app = make_app(url, tmp_path, clock)
        async with app.run_test(size=(120, 36)) as pilot:
            await on_row(pilot, app, "w1")
            await pilot.press("D")
            await settle(pilot)
            text = words_on_screen(app)
            assert "does not sign downloads of training checkpoints" in text
            assert "What works: export it from a training session" in text
            assert "Total:" not in text  # nothing that could go
            await pilot.press("enter")  # nothing to download: enter starts nothing
            await settle(pilot)
            assert isinstance(app.screen, DownloadDialog)
            await pilot.press("escape")
            await settle(pilot)
    assert not any(tmp_path.glob("run-1_*"))


async def test_progress_per_file_stop_and_resume(
    served: tuple[str, FileTap], clock: FixedClock, tmp_path: Path
) -> None:
    url, tap = served
    # The big file stops there until released (progress is reported every MiB, so past 2).
    tap.stall_after = 2 * MiB + MiB // 2
    app = make_app(url, tmp_path, clock)
    target = tmp_path / "got" / FOLDER
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await on_row(pilot, app, "final")
            await pilot.press("D")
            await settle(pilot)
            await into(pilot, "got")
            await pilot.press("enter")
            await until(lambda: "big.bin  2." in screen_text(app), pilot.pause)
            text = screen_text(app)
            assert re.search(r"big\.bin  2\.\d MiB / 3\.0 MiB · [\d.]+ \w+/s · \S+ left", text)
            assert re.search(r"Downloading final \(esc stops\): 2\.\d MiB / 3\.0 MiB", text)
            await pilot.press("j", "k")  # browsing goes on
            await pilot.press("q")  # quitting asks, as for a change
            await pilot.pause()
            assert isinstance(app.screen, QuitDialog) and "Downloading" in screen_text(app)
            await pilot.press("n")
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, StopDialog)
            assert app.focused is not None and app.focused.id == "quit-cancel"
            await pilot.press("y")
            await pilot.pause()
            tap.release.set()
            await settle(pilot)
            assert not (target / "big.bin").exists() and (target / "big.bin.part").exists()
            assert any("D resumes it" in n.message for n in app._notifications)
            final = ("demo", "tinker://run-1/external_weights/final")
            assert checkpoints(app).marks == {final}  # not downloaded: stays marked
            tap.reset()
            await pilot.press("D")
            await settle(pilot)
            assert f"→ got/{FOLDER}/" in screen_text(app)  # the last folder
            await pilot.press("enter")
            await settle(pilot)
            assert held(target) == FILES
            assert 0 < tap.sent < sum(map(len, FILES.values()))  # only the rest came
    finally:
        tap.release.set()


async def test_the_whole_line_covers_every_checkpoint_chosen(
    store: Store, clock: FixedClock, tmp_path: Path
) -> None:
    """Two checkpoints: the status line counts the bytes of both (those done, the one being
    fetched, the other's size as its row knows it), not only the one being fetched."""
    store.create_run("run-1", "base/model")
    store.add_checkpoint("run-1", "external_weights/final", FILES)
    store.add_checkpoint("run-1", "external_weights/early", {"small.bin": os.urandom(MiB)})
    tap = FileTap(create_app(store, sweep_interval=None, url_signer=UrlSigner(600)))
    tap.stall_after = 2 * MiB + MiB // 2  # final's big.bin stops there; early's files pass
    with run_server(tap) as url:
        app = make_app(url, tmp_path, clock)
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                await settle(pilot)
                await pilot.press("2", "ctrl+a", "D")
                await settle(pilot)
                assert "Total: 2 checkpoints · 4.0 MiB" in screen_text(app)
                await into(pilot, "got")
                await pilot.press("enter")
                await until(lambda: "big.bin  2." in screen_text(app), pilot.pause)
                text = screen_text(app)
                assert re.search(r"big\.bin  2\.\d MiB / 3\.0 MiB", text)  # its own line
                whole = r"Downloading [12] of 2 final \(esc stops\): \d\.\d MiB / 4\.0 MiB"
                assert re.search(whole + r" · [\d.]+ \w+/s · \S+ left", text)
                tap.release.set()
                await settle(pilot)
                assert any("Downloaded 2 of 2" in n.message for n in app._notifications)
        finally:
            tap.release.set()
    assert held(tmp_path / "got" / FOLDER) == FILES
