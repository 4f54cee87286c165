"""Bringing snapshots to the browse screen: the first load page by page, refreshes, live
training logs, and the loss curves' metrics.jsonl.

`SnapshotFeed` is a plain object the main screen owns; the screen runs its methods in its
workers (a worker belongs to a Textual node) and shows what the feed hands it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import replace
from operator import attrgetter
from pathlib import Path
from typing import Protocol

from ckpt_tui.catalog import RunSummary
from ckpt_tui.catalog.snapshot import Snapshot, backend_problems, load_snapshot
from ckpt_tui.client import ClientError
from ckpt_tui.training.logdirs import METRICS_FILE_NAME, Metrics, read_metrics
from ckpt_tui.tui.log_refresh import refresh_log_dirs, refresh_metrics
from ckpt_tui.tui.screens.host import ScreenHost
from ckpt_tui.tui.services import Services
from ckpt_tui.tui.state import BrowseState
from ckpt_tui.tui.widgets import FastTable

SHOWN_PROBLEMS = 3
"""A notice of problems names this many; `ckpt-tui ls` lists them all."""


class Host(ScreenHost, Protocol):
    """What the feed needs from the screen it feeds."""

    state: BrowseState
    snapshot: Snapshot | None
    fetching: bool
    refreshing: bool
    progress: tuple[int, int] | None
    error: str | None
    new_above: frozenset[str]
    dropped_marks: tuple[str, frozenset[Hashable]] | None

    @property
    def runs_table(self) -> FastTable[RunSummary]: ...

    def warm_up(self) -> object:
        """Sort and index the current snapshot's rows in a worker thread."""
        ...

    def update_details(self) -> None: ...


def problems_notice(problems: list[str]) -> str:
    shown = "\n".join(problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    return shown + (f"\n... and {more} more: `ckpt-tui ls` lists them all" if more > 0 else "")


class SnapshotFeed:
    """Loads snapshots for the screen `host` and shows them there."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.whole_shown = False
        """The view shows a complete snapshot (not the first load's pages so far)."""
        self.reported_problems: set[str] = set()

    @property
    def services(self) -> Services:
        return self.host.services

    # --- loading -----------------------------------------------------------------------------
    async def load(self) -> None:
        """Fetch everything; the screen fills in as pages arrive and never blocks on the network."""
        host = self.host
        host.fetching, host.progress = True, None
        # The first load fills the screen in page by page; a refresh keeps showing the
        # current snapshot until the new one is whole, so rows, totals and the cursor never
        # fall back to a first page's worth.
        host.refreshing = host.snapshot is not None
        fill_in = None if host.refreshing else self.apply_page
        services = self.services
        try:
            client = await services.get_client()
            snapshot = await load_snapshot(
                client, services.log_settings, self.on_progress, fill_in, host.row_cache
            )
        except ClientError as exc:
            self.show_error(exc.message)
        else:
            host.error = None
            self.show_complete(snapshot)
            if snapshot.complete:  # a partial list cannot tell what is gone
                self.drop_gone_marks()
            if await asyncio.to_thread(refresh_metrics, services.metrics_cache):
                host.update_details()  # a refresh reads the loss curves' new lines too
            if snapshot.incomplete:
                host.notify(
                    f"{snapshot.incomplete}.\nNothing is marked missing, and keep policies are "
                    "off until a refresh (r) reads the whole list.",
                    title="Incomplete list",
                    severity="warning",
                    markup=False,
                )
            self.report_problems(snapshot)
        finally:
            host.fetching = False

    def on_progress(self, loaded: int, total: int) -> None:
        self.host.progress = (loaded, total)

    def show_error(self, message: str) -> None:
        host = self.host
        host.error = message
        hint = "Press r to retry."
        if host.snapshot is None:
            host.checkpoints_table.empty_message = f"{hint} {message}"
            host.runs_table.empty_message = "No runs: the backend could not be reached."
        host.notify(f"{message}\n{hint}", title="Backend error", severity="error", markup=False)

    def report_problems(self, snapshot: Snapshot) -> None:
        """Say what the backend could not read (a broken run.json, an unreadable file), once
        per problem; the rows stay listed, with the reason in their metadata."""
        problems = backend_problems(snapshot.runs, snapshot.checkpoints)
        new = [problem for problem in problems if problem not in self.reported_problems]
        self.reported_problems = set(problems)
        if new:
            title = f"{len(new)} problem{'s' if len(new) > 1 else ''} reading the backend's files"
            self.host.notify(problems_notice(new), title=title, severity="warning", markup=False)

    # --- showing -----------------------------------------------------------------------------
    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Show a (possibly partial) snapshot, keeping cursor, filter, sort and marks."""
        host = self.host
        host.snapshot = snapshot
        runs = snapshot.catalog.runs
        run_id = host.state.run_id
        if run_id is None or snapshot.catalog.run(run_id) is None:
            run_id = runs[0].run_id if runs else None
        host.checkpoints_table.empty_message = "No checkpoints here."
        host.runs_table.empty_message = "No runs."
        # The same choices over the new rows: assigning the state refreshes the panes.
        host.state = replace(host.state, run_id=run_id)

    def apply_page(self, snapshot: Snapshot) -> None:
        """Show the first load's pages so far."""
        self.whole_shown = False
        self.apply_snapshot(snapshot)

    def show_complete(self, snapshot: Snapshot) -> None:
        """Show a whole snapshot, then sort and index it ahead of the key presses.

        New rows stay in sight: with the cursor on the first row the view follows the top
        (as `tail -f` does); otherwise it stays and the status line counts the new rows above.
        """
        host = self.host
        table = host.checkpoints_table
        at_top = table.cursor_row == 0
        before = set(map(attrgetter("tinker_path"), table.rows)) if self.whole_shown else None
        self.apply_snapshot(snapshot)
        self.whole_shown = True
        if before is not None:
            self.follow_new_rows(at_top, before)
        if not snapshot.catalog.runs:
            nothing = self.services.backend.nothing_found()
            host.runs_table.empty_message = table.empty_message = nothing
        host.warm_up()

    def follow_new_rows(self, at_top: bool, before: set[str]) -> None:
        host = self.host
        table = host.checkpoints_table
        if at_top:
            table.move_cursor(0)
            host.new_above = frozenset()
        else:
            above = table.rows[: table.cursor_row]
            new = {row.tinker_path for row in above if row.tinker_path not in before}
            host.new_above = host.new_above | new

    def drop_gone_marks(self) -> None:
        """Unmark checkpoints the server no longer has (a trainer deleted a rolling one)."""
        host = self.host
        snapshot, table = host.snapshot, host.checkpoints_table
        marks = table.marks
        if snapshot is None or not marks:
            return
        rows = snapshot.catalog.row_by_path
        gone = {key for key in marks if (row := rows.get(str(key))) is None or row.is_missing}
        if gone:
            left = marks - gone
            table.set_marks(left)
            count = f"{len(gone)} marked checkpoint{'s' if len(gone) > 1 else ''}"
            host.dropped_marks = (f"{count} no longer stored: unmarked", left)

    # --- live training logs (these run in worker threads) -------------------------------------
    def watch_log_dirs(self) -> None:
        """Re-read training logs that grew (a run writing checkpoints right now), and the
        tail of every metrics.jsonl shown so far (the loss curve is live)."""
        host = self.host
        snapshot = host.snapshot
        if snapshot is not None and not host.fetching:
            joined = refresh_log_dirs(snapshot, host.row_cache)
            if joined is not None:
                host.app.call_from_thread(self.show_newer, snapshot, joined)
        if refresh_metrics(self.services.metrics_cache):
            host.app.call_from_thread(host.update_details)

    def show_newer(self, base: Snapshot, snapshot: Snapshot) -> None:
        """Show `snapshot`, made from `base`, unless another one replaced `base` meanwhile."""
        if self.host.snapshot is base:
            self.show_complete(snapshot)

    def cached_metrics(self, run: RunSummary | None) -> Metrics | None:
        if run is None or run.log_dir is None:
            return None
        return self.services.metrics_cache.get(str(run.log_dir.path))

    def read_metrics(self, folder: Path) -> None:
        """Read a log dir's metrics.jsonl (blocking), then show it."""
        self.services.metrics_cache[str(folder)] = read_metrics(folder / METRICS_FILE_NAME)
        self.host.app.call_from_thread(self.host.update_details)
