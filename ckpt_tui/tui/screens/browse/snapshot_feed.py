"""Bringing every backend's snapshot to the browse screen: each backend loads on its own (its
first load page by page), refreshes, live training logs, and the loss curves' metrics.jsonl.

`SnapshotFeed` is a plain object the browse screen owns; the screen runs its methods in its
workers (a worker belongs to a Textual node), one per backend, and shows the fleet the feed
hands it: each load replaces only its own backend's entry, so one slow or failing backend
never holds back the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Protocol

from ckpt_tui.backends import BackendState, Connection, Fleet
from ckpt_tui.backends.fleet import UNREACHABLE, ErrorKind
from ckpt_tui.backends.fleet_view import FleetCatalog, RowKey, RunKey, row_key, run_key
from ckpt_tui.backends.identity import one_store_message, store_id_of
from ckpt_tui.backends.load import error_kind, failure_text, measure_latency, resolve_rate
from ckpt_tui.catalog import RunSummary
from ckpt_tui.catalog.log_refresh import refresh_log_dirs, refresh_metrics
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import PARTIAL_EVERY, Snapshot, load_snapshot
from ckpt_tui.client import ClientError
from ckpt_tui.training.logdirs import METRICS_FILE_NAME, Metrics, read_metrics
from ckpt_tui.tui.screens.browse.host import ScreenHost
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.view.groups import RunsEntry
from ckpt_tui.tui.view.state import BrowseState
from ckpt_tui.tui.view.status import BackendProgress, failed_text
from ckpt_tui.tui.widgets import FastTable
from ckpt_tui.words import count_of

SHOWN_PROBLEMS = 3
"""A notice of problems names this many; `ckpt-tui ls` lists them all."""


class Host(ScreenHost, Protocol):
    """What the feed needs from the screen it feeds."""

    state: BrowseState
    fleet: Fleet
    shown_catalog: FleetCatalog | None
    fetching: frozenset[str]
    refreshing: bool
    progress: tuple[BackendProgress, ...]
    new_above: frozenset[RowKey]
    dropped_marks: tuple[str, frozenset[Hashable]] | None

    @property
    def runs_table(self) -> FastTable[RunsEntry]: ...

    def warm_up(self) -> object:
        """Sort and index the current snapshots' rows in a worker thread."""
        ...

    def update_details(self) -> None: ...


def problems_notice(problems: list[str]) -> str:
    shown = "\n".join(problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    return shown + (f"\n... and {more} more: `ckpt-tui ls` lists them all" if more > 0 else "")


class SnapshotFeed:
    """Loads each backend's snapshots for the screen `host` and shows them there."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.whole_shown = False
        """The view shows whole snapshots (not a first load's pages so far)."""
        self.reported_problems: dict[str, set[str]] = {}
        self.progress: dict[str, tuple[int, int]] = {}
        self.last_shown = 0.0
        self.refresh_due = False
        """Pages arrived that the panes do not show yet (a refresh is scheduled)."""
        self.loads: dict[str, int] = {}
        """Each backend loading now, with its load's number (a restarted load is a new one)."""
        self.loads_started = 0
        self.store_ids: dict[str, str] = {}
        """The store id of each backend shown (one store is one backend: see `one_store`)."""

    @property
    def services(self) -> Services:
        return self.host.services

    @property
    def several(self) -> bool:
        return len(self.services.connections) > 1

    def named(self, backend: str) -> str:
        """'box1: ' before what a backend says, when several are open."""
        return f"{backend}: " if self.several else ""

    # --- loading -----------------------------------------------------------------------------
    def first_loads(self) -> list[str]:
        """Backends loading with nothing to show yet: their pages fill in as they arrive."""
        fleet = self.host.fleet
        return [name for name in self.loads if fleet.state(name).snapshot is None]

    def loading_changed(self) -> None:
        """The screen's loading vars, from every backend's load."""
        host = self.host
        first = self.first_loads()
        names = first or list(self.loads)
        several = self.several
        progress = tuple((name if several else "", self.progress.get(name)) for name in names)
        host.fetching, host.refreshing, host.progress = frozenset(self.loads), not first, progress

    async def load(self, name: str) -> None:
        """Fetch one backend; its rows fill in as pages arrive, and no backend waits for it.

        A refresh keeps showing the backend's current snapshot until the new one is whole, so
        rows, totals and the cursor never fall back to a first page's worth.
        """
        host = self.host
        self.loads_started += 1
        number = self.loads[name] = self.loads_started
        self.progress.pop(name, None)
        self.loading_changed()
        connection = self.services.connections[name]
        if connection.problem is not None:  # e.g. its key variable is unset: nothing is sent
            self.show_problem(name, connection.problem)
            return
        fill_in = None if host.fleet.state(name).snapshot else partial(self.apply_page, name)
        rating = asyncio.ensure_future(resolve_rate(connection))  # side by side with the load
        try:
            if self.several and (one_store := await self.one_store(name, connection)):
                rating.cancel()
                self.show_problem(name, one_store, keep_rows=False)
                return
            snapshot = await load_snapshot(
                connection.client,
                self.services.log_settings,
                partial(self.on_progress, name),
                fill_in,
                self.row_cache(name),
                own_logs_only=self.several,
            )
            rate, source = await rating
        except ClientError as exc:
            rating.cancel()
            self.show_error(name, exc)
        else:
            state = host.fleet.state(name).replace(
                snapshot=snapshot,
                error=None,
                complete=snapshot.complete,
                rate=rate,
                rate_source=source,
            )
            await self.loaded(state)
            # The view is whole already; the header's latency follows one request later.
            await self.measure(name, connection)
        finally:
            if self.loads.get(name) == number:
                del self.loads[name]
                self.loading_changed()

    async def one_store(self, name: str, connection: Connection) -> str | None:
        """Why backend `name` is a store another backend shows already (its store id says
        so), or None: one store is shown, and changed, through one backend only."""
        store_id = await store_id_of(connection)
        if store_id is None:
            return None
        for other, known in self.store_ids.items():
            if known == store_id and other != name:
                first = self.services.connections[other].backend
                return one_store_message(first, connection.backend, f"store id {store_id}")
        self.store_ids[name] = store_id
        return None

    def row_cache(self, backend: str) -> RowCache:
        return self.host.row_cache_of(backend)

    def on_progress(self, name: str, loaded: int, total: int) -> None:
        self.progress[name] = (loaded, total)
        self.loading_changed()

    async def measure(self, name: str, connection: Connection) -> None:
        try:
            latency = await measure_latency(connection.client, self.services.clock)
        except ClientError:
            return  # it answered the whole load: one failed extra request changes nothing
        # Only the header shows it: the panes stay as they are (no re-sort of every row).
        fleet = self.host.fleet
        if self.host.is_showing:  # the check may end as the screen goes (the app quits)
            self.host.fleet = fleet.with_backend(name, fleet.state(name).replace(latency=latency))

    async def loaded(self, state: BackendState) -> None:
        snapshot = state.snapshot
        assert snapshot is not None
        if not self.host.is_showing:
            return  # a load that ended as the screen went: nothing to show it in
        fleet = self.host.fleet.with_backend(state.name, state)
        if set(self.loads) - {state.name} and self.host.shown_catalog is not None:
            # Others are still loading: the panes follow with their pages (each refresh sorts
            # every row shown), and the sorting ahead of the keys waits for the last one.
            self.follow(fleet)
        else:
            self.show_complete(fleet)
        if snapshot.complete:  # a partial list cannot tell what is gone
            self.drop_gone_marks(state.name, snapshot)
        if await asyncio.to_thread(refresh_metrics, self.services.metrics_cache):
            self.host.update_details()  # a refresh reads the loss curves' new lines too
        if not self.host.is_showing:
            return  # the screen went while the metrics were read
        if snapshot.incomplete:
            self.host.notify(
                f"{self.named(state.name)}{snapshot.incomplete}.\nNothing is marked missing, "
                "and keep policies are off until a refresh (r) reads the whole list.",
                title="Incomplete list",
                severity="warning",
                markup=False,
            )
        self.report_problems(state.name, snapshot)

    def show_error(self, name: str, exc: ClientError) -> None:
        self.show_problem(name, failure_text(exc), error_kind(exc))

    def show_problem(
        self, name: str, message: str, kind: ErrorKind = UNREACHABLE, *, keep_rows: bool = True
    ) -> None:
        """The backend's entry says what went wrong and what to do; the others stay shown.
        Without `keep_rows`, its rows go too (nothing can be changed through it)."""
        host = self.host
        if not host.is_showing:
            return  # a load that failed as the screen went
        state = host.fleet.state(name).replace(error=message, error_kind=kind, complete=False)
        if not keep_rows:
            state = state.replace(snapshot=None)
        self.apply_fleet(host.fleet.with_backend(name, state))
        # A refused key's message says what to do: a retry would send the same key.
        hint = "Press r to retry." if kind == UNREACHABLE else ""
        if host.shown_catalog is None:
            shown_name = name if self.several else ""
            host.checkpoints_table.empty_message = failed_text(shown_name, message, kind)
            nobody = "no backend could" if self.several else "the backend could not"
            why = "be reached" if kind == UNREACHABLE else "be read (a key was refused)"
            host.runs_table.empty_message = f"No runs: {nobody} {why}."
        title = f"Backend {name}: error" if self.several else "Backend error"
        host.notify(f"{message}\n{hint}".strip(), title=title, severity="error", markup=False)

    def report_problems(self, name: str, snapshot: Snapshot) -> None:
        """Say what a backend could not read (a broken run.json, an unreadable file), once
        per problem; the rows stay listed, with the reason in their metadata."""
        problems = snapshot.backend_problems
        said = self.reported_problems.get(name, set())
        new = [problem for problem in problems if problem not in said]
        self.reported_problems[name] = set(problems)
        if new:
            title = f"{count_of(len(new), 'problem')} reading the backend's files"
            title = f"{self.named(name)}{title}"
            self.host.notify(problems_notice(new), title=title, severity="warning", markup=False)

    # --- showing -----------------------------------------------------------------------------
    def apply_fleet(self, fleet: Fleet) -> None:
        """Show a fleet (some backends partial, loading or failed), keeping cursor, filter,
        sort and marks."""
        host = self.host
        self.refresh_due, self.last_shown = False, time.monotonic()
        if not host.is_showing:
            return  # a load that ended after the screen went (e.g. as the app quits)
        catalog = FleetCatalog(fleet) if fleet.snapshots() else None
        host.shown_catalog = catalog
        host.fleet = fleet
        run = host.state.run_key
        if catalog is not None and catalog.run(run) is None and not self.on_backend_row(run):
            run = self.first_run_key(catalog)
        # The same choices over the new rows: assigning the state refreshes the panes.
        host.state = replace(host.state, run_key=run)

    def first_run_key(self, catalog: FleetCatalog) -> RunKey | None:
        """Where the runs pane starts: the first backend's row (all its checkpoints below)
        when several are open, else the first run."""
        if self.several:
            return (self.host.fleet.names[0], "")
        return run_key(catalog.runs[0]) if catalog.runs else None

    def on_backend_row(self, key: RunKey | None) -> bool:
        """`key` names a backend's own row in the runs pane (several backends only)."""
        return self.several and key is not None and key[1] == "" and key[0] in self.host.fleet.names

    def apply_page(self, name: str, snapshot: Snapshot) -> None:
        """Show a backend's first load's pages so far.

        Several backends send pages at once: the panes follow them at most every
        PARTIAL_EVERY seconds (each refresh sorts every row shown), the first at once.
        """
        self.whole_shown = False
        state = self.host.fleet.state(name).replace(snapshot=snapshot)
        self.follow(self.host.fleet.with_backend(name, state))

    def follow(self, fleet: Fleet) -> None:
        """Show `fleet` now if the panes have not followed for PARTIAL_EVERY seconds (or show
        nothing yet), else at the end of that time; the header counts it at once."""
        host = self.host
        now = time.monotonic()
        if host.shown_catalog is None or now - self.last_shown >= PARTIAL_EVERY:
            self.apply_fleet(fleet)
            return
        if host.is_showing:
            host.fleet = fleet  # the header counts it now; the panes at the next refresh
        if not self.refresh_due:
            self.refresh_due = True
            asyncio.get_running_loop().call_later(PARTIAL_EVERY, self.show_pages)

    def show_pages(self) -> None:
        """The pages that arrived since the panes last followed (unless shown meanwhile)."""
        if self.refresh_due:
            self.apply_fleet(self.host.fleet)

    def show_complete(self, fleet: Fleet, warm: bool = True) -> None:
        """Show a fleet whose loaded backends are whole, then sort and index it ahead of the
        key presses.

        New rows stay in sight: with the cursor on the first row the view follows the top
        (as `tail -f` does); otherwise it stays and the status line counts the new rows above.
        """
        host = self.host
        if not host.is_showing:
            return  # e.g. a change's results, or a log's new lines, as the screen went
        table = host.checkpoints_table
        at_top = table.cursor_row == 0
        before = set(map(row_key, table.rows)) if self.whole_shown else None
        self.apply_fleet(fleet)
        self.whole_shown = not self.first_loads()
        if before is not None:
            self.follow_new_rows(at_top, before)
        if warm:
            host.warm_up()

    def follow_new_rows(self, at_top: bool, before: set[RowKey]) -> None:
        host = self.host
        table = host.checkpoints_table
        if at_top:
            table.move_cursor(0)
            host.new_above = frozenset()
        else:
            above = map(row_key, table.rows[: table.cursor_row])
            host.new_above = host.new_above | {key for key in above if key not in before}

    def drop_gone_marks(self, backend: str, snapshot: Snapshot) -> None:
        """Unmark checkpoints a backend no longer has (a trainer deleted a rolling one), as its
        whole `snapshot` says (whether the panes show it yet or not)."""
        host = self.host
        table = host.checkpoints_table
        marks = {key for key in table.marks if isinstance(key, tuple) and key[0] == backend}
        if not marks:
            return
        rows = snapshot.catalog.row_by_path
        gone = {key for key in marks if (row := rows.get(key[1])) is None or row.is_missing}
        if gone:
            left = table.marks - gone
            table.set_marks(left)
            count = count_of(len(gone), "marked checkpoint")
            host.dropped_marks = (f"{count} no longer stored: unmarked", left)

    # --- live training logs (these run in worker threads) -------------------------------------
    def watch_log_dirs(self) -> None:
        """Re-read training logs that grew (a run writing checkpoints right now), and the
        tail of every metrics.jsonl shown so far (the loss curve is live)."""
        host = self.host
        for state in host.fleet.states:
            snapshot = state.snapshot
            if snapshot is not None and state.name not in self.loads:
                joined = refresh_log_dirs(snapshot, self.row_cache(state.name))
                if joined is not None:
                    host.app.call_from_thread(self.show_newer, state.name, snapshot, joined)
        if refresh_metrics(self.services.metrics_cache):
            host.app.call_from_thread(host.update_details)

    def show_newer(self, name: str, base: Snapshot, snapshot: Snapshot) -> None:
        """Show `snapshot`, made from `base`, unless another one replaced `base` meanwhile."""
        fleet = self.host.fleet
        state = fleet.state(name)
        if state.snapshot is base:
            self.show_complete(fleet.with_backend(name, state.replace(snapshot=snapshot)))

    def cached_metrics(self, run: RunSummary | None) -> Metrics | None:
        if run is None or run.log_dir is None:
            return None
        return self.services.metrics_cache.get(str(run.log_dir.path))

    def read_metrics(self, folder: Path) -> None:
        """Read a log dir's metrics.jsonl (blocking), then show it."""
        self.services.metrics_cache[str(folder)] = read_metrics(folder / METRICS_FILE_NAME)
        self.host.app.call_from_thread(self.host.update_details)
