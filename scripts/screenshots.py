"""Write the README screenshots: the app on the demo, driven with Pilot, saved as SVGs.

    python scripts/screenshots.py [--out screenshots]

Every picture is the same on every run: the demo is built at a fixed time, the app runs with
that fixed clock, and the real server app answers in-process under a fixed URL (no temp path,
port or "now" shows). Each scene starts from a freshly built demo.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the scene helpers live in the test suite, beside the repo

from starlette.types import ASGIApp  # noqa: E402
from textual.pilot import Pilot  # noqa: E402
from textual.screen import Screen  # noqa: E402
from textual.widgets import Input  # noqa: E402

from ckpt_tui.backends.fleet_view import row_key, run_key  # noqa: E402
from ckpt_tui.catalog import CheckpointRow  # noqa: E402
from ckpt_tui.client.download import FileProgress, Progress  # noqa: E402
from ckpt_tui.client.download.wording import ProgressView, WholeProgress  # noqa: E402
from ckpt_tui.tui.app import CkptApp  # noqa: E402
from ckpt_tui.tui.screens.browse.downloads import DownloadJob  # noqa: E402
from ckpt_tui.tui.screens.browse_screen import BrowseScreen  # noqa: E402
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog  # noqa: E402
from ckpt_tui.tui.screens.download_dialog import DownloadDialog, DownloadPlan  # noqa: E402
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog  # noqa: E402
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog  # noqa: E402
from tests.support.faulty_app import FaultyApp  # noqa: E402
from tests.support.tui import (  # noqa: E402
    checkpoints,
    find,
    pictured_demo,
    runs_pane,
    settle,
)

Scene = Callable[[Pilot[None]], Awaitable[None]]
BIG = (120, 36)
SMALL = (80, 24)
FAILING_NAME = "000200"
"""The checkpoint name the bulk-result picture's server refuses (403) to delete."""


async def show_run(pilot: Pilot[None], run_name: str) -> None:
    """By-run view with `run_name` highlighted in the runs pane."""
    app = pilot.app
    assert isinstance(app, CkptApp)
    await pilot.press("1")
    table = runs_pane(app)
    run = next(entry for entry in table.rows if getattr(entry, "display_name", "") == run_name)
    assert table.move_cursor_to_key(run_key(run))
    await settle(pilot)


async def put_cursor_on(pilot: Pilot[None], row: CheckpointRow) -> None:
    app = pilot.app
    assert isinstance(app, CkptApp)
    assert checkpoints(app).move_cursor_to_key(row_key(row)), f"{row.tinker_path} not shown"
    await settle(pilot)


async def wait_for_dialog(pilot: Pilot[None], dialog: type[Screen[Any]]) -> None:
    """A worker opens dialogs: wait until `dialog` is the screen (never settle: it waits)."""
    for _ in range(200):
        if isinstance(pilot.app.screen, dialog):
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise RuntimeError(f"the {dialog.__name__} did not open")


def app_of(pilot: Pilot[None]) -> CkptApp:
    assert isinstance(pilot.app, CkptApp)
    return pilot.app


async def main_view(pilot: Pilot[None]) -> None:
    await show_run(pilot, "sl/llama-8b-tulu3")
    await put_cursor_on(pilot, find(app_of(pilot), "sl/llama-8b-tulu3", "000500", "state"))


async def all_by_size(pilot: Pilot[None]) -> None:
    await pilot.press("2", "s", "S", "g")  # the cursor stays on its row: back to the top
    await settle(pilot)


async def details(pilot: Pilot[None]) -> None:
    """The last periodic save of the RL run: record fields, eval loss and the curve marker."""
    await show_run(pilot, "rl/qwen3-8b-math")
    await put_cursor_on(pilot, find(app_of(pilot), "rl/qwen3-8b-math", "000250", "state"))


async def ttl_dialog(pilot: Pilot[None]) -> None:
    app = app_of(pilot)
    await show_run(pilot, "sl/llama-8b-tulu3")
    names = ("000100", "000200", "000300")
    checkpoints(app).set_marks([row_key(find(app, "sl/llama-8b-tulu3", n, "state")) for n in names])
    await pilot.press("t")
    await wait_for_dialog(pilot, TtlDialog)
    await pilot.press("2")  # the dialog opens in its empty box: show a preset's preview
    await pilot.pause()


async def delete_across_backends(pilot: Pilot[None]) -> None:
    """Old saves on both backends, by size: the dialog names each backend and its share."""
    app = app_of(pilot)
    await pilot.press("2", "s", "S")  # biggest first
    await settle(pilot)
    marked = [
        find(app, "full/llama-3b-ft", "000150", "state"),
        find(app, "sl/llama-8b-tulu3", "000100", "state"),
        find(app, "llama-1b-sft", "checkpoint-500", "state"),
        find(app, "llama-3b-dpo", "checkpoint-200", "state"),
    ]
    checkpoints(app).set_marks([row_key(row) for row in marked])
    await pilot.press("d")
    await wait_for_dialog(pilot, DeleteDialog)


async def delete_warnings(pilot: Pilot[None]) -> None:
    app = app_of(pilot)
    await pilot.press("2")
    await settle(pilot)
    marked = [
        find(app, "full/llama-3b-ft", "final", "state"),
        find(app, "rl/qwen3-8b-math", "rolling_000260", "state"),
        find(app, "sl/qwen3-4b-chat", "final", "sampler"),
        find(app, "sl/llama-8b-tulu3", "000100", "state"),
        find(app, "sl/llama-8b-tulu3", "000100", "sampler"),
    ]
    checkpoints(app).set_marks([row_key(row) for row in marked])
    await pilot.press("slash", *"final", "enter")  # hides the marked 000100 and rolling rows
    await settle(pilot)
    await pilot.press("d")
    await wait_for_dialog(pilot, DeleteDialog)


async def bulk_result(pilot: Pilot[None]) -> None:
    app = app_of(pilot)
    await show_run(pilot, "sl/llama-8b-tulu3")
    names = ("000100", "000200", "000300")
    victims = [row for row in shown_rows(app) if row.name in names]
    checkpoints(app).set_marks([row_key(row) for row in victims])
    await pilot.press("d")
    await wait_for_dialog(pilot, DeleteDialog)
    await pilot.press("y")
    await settle(pilot)
    failed = next(row for row in shown_rows(app) if row.name == FAILING_NAME)
    await put_cursor_on(pilot, failed)


def shown_rows(app: CkptApp) -> list[CheckpointRow]:
    return list(checkpoints(app).rows)


async def keep_policy(pilot: Pilot[None]) -> None:
    await show_run(pilot, "sl/llama-8b-tulu3")
    await pilot.press("K")
    await wait_for_dialog(pilot, KeepPolicyDialog)
    await pilot.press("2")
    await pilot.pause(0.5)  # the preview follows the typed number after a short debounce
    await pilot.pause()


DOWNLOADED = (("sl/llama-8b-tulu3", "000500"), ("sl/qwen3-4b-chat", "final"))
"""The sampler checkpoints the download pictures fetch: (run, name)."""
MiB = 1024 * 1024


def download_rows(app: CkptApp) -> list[CheckpointRow]:
    return [find(app, run, name, "sampler") for run, name in DOWNLOADED]


async def download_dialog(pilot: Pilot[None]) -> None:
    """Two checkpoints marked, D: where they go (as the official CLI names the folders)."""
    app = app_of(pilot)
    await show_run(pilot, "sl/llama-8b-tulu3")
    checkpoints(app).set_marks([row_key(row) for row in download_rows(app)])
    await pilot.press("D")
    await wait_for_dialog(pilot, DownloadDialog)
    dialog = app.screen
    assert isinstance(dialog, DownloadDialog)
    for _ in range(200):  # the dialog asks the backend which types it signs
        if dialog.ready is not None:
            break
        await pilot.pause(0.01)
    await pilot.pause()


async def download_progress(pilot: Pilot[None]) -> None:
    """The screen while a download runs: the whole (both checkpoints) in the status line,
    each file in flight above it. Staged: the numbers are set through the screen's own
    progress views with a clock that moves 40 s between two reports (a real download's rates
    would differ every run)."""
    app = app_of(pilot)
    await show_run(pilot, "sl/llama-8b-tulu3")
    await put_cursor_on(pilot, download_rows(app)[0])
    screen = app.screen
    assert isinstance(screen, BrowseScreen)
    rows = download_rows(app)
    downloads = screen.downloads
    downloads.running = DownloadJob(DownloadPlan(Path("."), rows))
    ticks = [0.0]
    view = ProgressView(clock=lambda: ticks[0])
    whole = WholeProgress([row.size.bytes for row in rows], clock=lambda: ticks[0])
    sizes = {f"model-0000{i}-of-00004.safetensors": 1900 * MiB for i in range(1, 5)}
    sizes["config.json"] = 1024
    start = {name: 0 for name in sizes}
    later = {**start, "config.json": 1024, "model-00001-of-00004.safetensors": 1900 * MiB}
    later |= {"model-00002-of-00004.safetensors": 1200 * MiB}
    later |= {"model-00003-of-00004.safetensors": 700 * MiB}
    progress = Progress(sum(sizes.values()), files=len(sizes))  # one download: one object
    for moment, done in ((0.0, start), (40.0, later)):
        ticks[0] = moment
        progress.by_file = {
            name: FileProgress(size, done[name], whole=done[name] == size)
            for name, size in sizes.items()
        }
        progress.done = progress.fetched = sum(done.values())
        progress.files_done = sum(f.whole for f in progress.by_file.values())
        view.update(progress)
        whole.update(progress)
    downloads.view, downloads.whole = view, whole
    downloads.title = f"Downloading 1 of 2 {rows[0].name}"
    downloads.redraw()
    await pilot.pause()


@dataclass(frozen=True)
class Picture:
    """One screenshot: a file name, the terminal size and what to do before taking it."""

    file_name: str
    size: tuple[int, int]
    scene: Scene
    failing_server: bool = False
    with_box: bool = False
    """The demo's training box too, as `ckpt-tui demo` opens it."""
    with_bucket: bool = False
    """And its bucket: the first screen shows all three backends, as `ckpt-tui demo` does."""


PICTURES = (
    Picture("main.svg", BIG, main_view, with_box=True, with_bucket=True),
    Picture("main-80x24.svg", SMALL, main_view, with_box=True, with_bucket=True),
    Picture("all-by-size.svg", BIG, all_by_size, with_box=True, with_bucket=True),
    Picture("all-80x24.svg", SMALL, all_by_size, with_box=True, with_bucket=True),
    Picture("details.svg", BIG, details),
    Picture("ttl-dialog.svg", BIG, ttl_dialog),
    Picture("delete-warnings.svg", BIG, delete_warnings),
    Picture("delete-two-backends.svg", BIG, delete_across_backends, with_box=True),
    Picture("bulk-result.svg", BIG, bulk_result, failing_server=True),
    Picture("keep-policy.svg", BIG, keep_policy),
    Picture("download-dialog.svg", BIG, download_dialog),
    Picture("download-progress.svg", BIG, download_progress),
)


def failing_one_name(server: ASGIApp) -> ASGIApp:
    faulty = FaultyApp(server)
    faulty.fail_names({FAILING_NAME}, status=403)  # 403: refused, and not retried
    return faulty


def steady_cursors(app: CkptApp) -> None:
    """A blinking text cursor is on or off by timing; pictures show it steadily on."""
    for box in app.screen.query(Input):
        box.cursor_blink = False


async def take(picture: Picture, work: Path, out: Path) -> Path:
    """Build a fresh demo, play the scene and save the SVG; return where it went."""
    wrap = failing_one_name if picture.failing_server else None
    with pictured_demo(
        work / "demo", wrap=wrap, with_box=picture.with_box, with_bucket=picture.with_bucket
    ) as app:
        async with app.run_test(size=picture.size, notifications=True) as pilot:
            await settle(pilot)
            await picture.scene(pilot)
            steady_cursors(app)
            await pilot.pause()
            app.save_screenshot(picture.file_name, str(out))
    return out / picture.file_name


def with_fixed_hash_seed() -> None:
    """Re-run this script with PYTHONHASHSEED=0 unless it already has it.

    Marks are a set, and the dialogs list marked checkpoints in set order, which follows the
    per-process string hash seed; a fixed seed keeps the dialog pictures the same every run.
    """
    if os.environ.get("PYTHONHASHSEED") == "0":
        return
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]], env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=REPO / "screenshots", help="output folder")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    for picture in PICTURES:
        with tempfile.TemporaryDirectory(prefix="ckpt-tui-shot-") as work:
            written = asyncio.run(take(picture, Path(work), out))
        print(f"wrote {written.relative_to(REPO) if written.is_relative_to(REPO) else written}")
    return 0


if __name__ == "__main__":
    with_fixed_hash_seed()
    raise SystemExit(main())
