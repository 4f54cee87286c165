"""Downloading checkpoints from the browse screen: `D` asks where (DownloadDialog), then
each checkpoint's files come through its backend's client (ckpt_tui.client.download, the
engine `ckpt-tui download` uses) while the user keeps browsing.

`Downloads` is a plain object the screen owns, as `Changes` is. One download runs at a time,
never beside a change; esc or ctrl+c asks to stop it (the `.part` files stay, so `D` again
resumes), and quitting asks first as for a running change. The status line says bytes, rate
and time left for the whole download (every checkpoint chosen); a panel above it says the
same per file in flight. What the screen shows goes to it as messages (`ProgressChanged`,
`DownloadDone`): the screen is the only writer of its state.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.backends.fleet_view import RowKey, row_key
from ckpt_tui.catalog import CheckpointRow, stored_only
from ckpt_tui.client import ClientError
from ckpt_tui.client.download import DOWNLOAD_FAILURES, Progress, Result, download
from ckpt_tui.client.download.wording import ProgressView, WholeProgress
from ckpt_tui.sizes import format_bytes
from ckpt_tui.tui.screens.browse.host import ScreenHost
from ckpt_tui.tui.screens.browse.messages import DownloadDone, ProgressChanged
from ckpt_tui.tui.screens.download_dialog import DownloadDialog, DownloadPlan
from ckpt_tui.tui.screens.quit_dialog import StopDialog
from ckpt_tui.words import count_of

REDRAW_SECONDS = 0.2
"""Progress is shown at most this often (a download reports every chunk)."""
FILE_LINES = 4
"""Files in flight shown one per line above the status (the engine's FILES_IN_FLIGHT)."""
DOWNLOAD_STOP = (
    "Stopping keeps what has arrived (the .part files); D on the same checkpoints resumes "
    "it. Those not downloaded stay marked."
)
FAILURES = (*DOWNLOAD_FAILURES, ClientError, OSError)


class Targets(Protocol):
    """Where the screen's changes say what an action acts on, and whether one runs."""

    @property
    def running(self) -> object | None: ...

    def targets(self) -> list[CheckpointRow]: ...


@dataclass
class DownloadJob:
    """A chosen download and how it went: results, failures and what was never started."""

    plan: DownloadPlan
    results: dict[RowKey, Result] = field(default_factory=dict)
    failed: dict[RowKey, str] = field(default_factory=dict)
    stop_asked: bool = False
    stopped: RowKey | None = None
    """The checkpoint that was being fetched when it stopped."""
    kept: Progress | None = None
    """The last progress of the checkpoint being fetched."""

    @property
    def unfinished(self) -> list[RowKey]:
        return [row_key(row) for row in self.plan.rows if row_key(row) not in self.results]

    def summary(self, parent: Path) -> tuple[str, bool]:
        """What the notice says, and whether anything is left undone."""
        unfinished = self.unfinished
        lines = [f"Downloaded {len(self.results)} of {len(self.plan.rows)} into {parent}"]
        lines += [f"✗ {path}: {reason}" for (_, path), reason in self.failed.items()]
        if self.stopped is not None:
            kept = self.kept
            got = "" if kept is None else f" ({format_bytes(kept.done)} of "
            got += "" if kept is None else f"{format_bytes(kept.total)} kept)"
            lines.append(f"Stopped {self.stopped[1]}{got}: D resumes it.")
        not_started = len(unfinished) - len(self.failed) - (self.stopped is not None)
        if not_started:
            lines.append(f"{not_started} not started.")
        if unfinished:
            lines.append("The ones not downloaded stay marked.")
        return "\n".join(lines), bool(unfinished)


class Downloads:
    """Ask where, then download, one checkpoint after another, for the screen `host`."""

    def __init__(self, host: ScreenHost, changes: Targets) -> None:
        self.host = host
        self.changes = changes
        self.into = "."
        """The folder the last download went into: the dialog's default next time."""
        self.running: DownloadJob | None = None
        self.fetching: asyncio.Task[Result] | None = None
        self.shown_at = 0.0
        self.redraw_due = False
        self.title = ""
        self.line = ""
        """The status line's progress last sent to the screen (the stop dialog shows it)."""
        self.view = ProgressView()
        self.whole = WholeProgress([])

    def ask(self) -> None:
        """`D`: the marked or highlighted checkpoints; the dialog asks where."""
        host = self.host
        if self.running is not None or self.changes.running is not None:
            host.notify("Another action is still running; wait for it to finish.")
            return
        rows = stored_only(self.changes.targets())
        if not rows:
            host.notify("Nothing to download: highlight or mark a stored checkpoint.")
            return
        services = host.services
        backends = sorted({row.backend for row in rows})
        where = "\n".join(f"from {services.describe_backend(name)}" for name in backends)
        dialog = DownloadDialog(
            rows,
            where,
            lambda name: services.client(name).signed_types(),
            services.describe_backend,
            self.into,
        )
        host.app.push_screen(dialog, self.chosen)

    def chosen(self, plan: DownloadPlan | None) -> None:
        if plan is None:
            return
        self.running, self.into = DownloadJob(plan), str(plan.parent)
        self.whole = WholeProgress([row.size.bytes for row in plan.rows])
        self.show(f"Downloading {count_of(len(plan.rows), 'checkpoint')}…")
        # The worker belongs to the screen (a worker needs a Textual node).
        self.host.run_worker(self.run(), group="download", description="download checkpoints")

    def show(self, line: str, files: str = "", status: str | None = None) -> None:
        """The stop and quit dialogs say `line` ("" when done), the status line `status`
        (the same, with how to stop it), else `line`."""
        self.line = line
        self.host.post_message(ProgressChanged(line if status is None else status, files))

    def ask_stop(self) -> None:
        """esc or ctrl+c while downloading: stop? ("Keep running" is focused)."""
        job = self.running
        if job is None or job.stop_asked:
            return
        where = self.host.services.describe_backend()
        dialog = StopDialog(self.host.running_text, where, DOWNLOAD_STOP)
        self.host.app.push_screen(dialog, lambda stop: self.stop() if stop else None)

    def stop(self) -> None:
        """Stop fetching (what arrived stays in `.part` files); start no other checkpoint."""
        job = self.running
        if job is None:
            return
        job.stop_asked = True  # no other checkpoint starts
        if self.fetching is not None:
            self.fetching.cancel()

    async def run(self) -> None:
        job = self.running
        if job is None:
            return
        try:
            for index, row in enumerate(job.plan.rows, 1):
                if job.stop_asked:
                    break
                await self.one(job, row, index)
        finally:
            self.running = None
            self.fetching = None
            self.show("")
        text, undone = job.summary(job.plan.parent.expanduser().resolve())
        self.host.post_message(DownloadDone(text, undone, job.unfinished))

    async def one(self, job: DownloadJob, row: CheckpointRow, index: int) -> None:
        client = self.host.services.client(row.backend)
        path, folder = TinkerPath.parse(row.tinker_path), job.plan.folder_of(row)
        count = len(job.plan.rows)
        self.title = f"Downloading{f' {index} of {count}' if count > 1 else ''} {row.name}"
        self.view = view = ProgressView()
        job.kept = None

        def arrived(progress: Progress) -> None:
            job.kept = progress
            view.update(progress)
            self.whole.update(progress)
            self.redraw_soon()

        self.fetching = asyncio.ensure_future(
            download(client, path, folder, clock=self.host.services.clock, on_progress=arrived)
        )
        try:
            job.results[row_key(row)] = await self.fetching
        except asyncio.CancelledError:
            if not job.stop_asked:
                raise  # the screen's worker is cancelled (the app quits): not ours to catch
            job.stopped = row_key(row)
        except FAILURES as exc:
            job.failed[row_key(row)] = str(exc)
        finally:
            self.whole.next(job.kept)

    def redraw_soon(self) -> None:
        """Show the progress now, or once `REDRAW_SECONDS` have passed since it was last
        shown: a download reports every chunk, and the last report before a pause (a slow
        server) must still show."""
        wait = self.shown_at + REDRAW_SECONDS - time.monotonic()
        if wait <= 0:
            self.redraw()
        elif not self.redraw_due:
            self.redraw_due = True
            asyncio.get_running_loop().call_later(wait, self.redraw)

    def redraw(self) -> None:
        self.redraw_due = False
        if self.running is None:
            return  # finished: its lines are cleared
        self.shown_at = time.monotonic()
        files = "\n".join(self.view.file_lines(FILE_LINES))
        whole = self.whole.line()
        self.show(f"{self.title}: {whole}", files, f"{self.title} (esc stops): {whole}")
