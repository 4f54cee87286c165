"""The browse screen's part that shows what its feed loads: the feed's workers post their
results as messages (`messages.py`), and the handlers here, on the screen's own message loop,
are the only writers of the fleet shown and of the loading state.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable
from dataclasses import replace

from textual import on
from textual.reactive import var
from textual.screen import Screen

from ckpt_tui.backends import Fleet
from ckpt_tui.backends.fleet import UNREACHABLE
from ckpt_tui.backends.fleet_view import FleetCatalog, RowKey, RunKey, row_key, run_key
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.catalog.partial_views import PARTIAL_EVERY, WORTH_A_VIEW
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.tui.screens.browse.messages import (
    BackendFailed,
    BackendLoaded,
    LatencyMeasured,
    LoadingChanged,
    MetricsRead,
    NewerSnapshot,
    PagesArrived,
)
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.screens.browse.snapshot_feed import SnapshotFeed, problems_notice
from ckpt_tui.tui.view.groups import RunsEntry
from ckpt_tui.tui.view.state import BrowseState
from ckpt_tui.tui.view.status import BackendProgress, failed_text
from ckpt_tui.tui.widgets import FastTable
from ckpt_tui.words import count_of


class FeedScreen(Screen[None]):
    """A screen showing every backend's snapshot as its `SnapshotFeed` reports it
    (`BrowseScreen` is the one)."""

    # always_update: assigning is the signal (and a fleet is never compared row by row).
    state: var[BrowseState] = var(BrowseState, always_update=True, init=False)
    """The user's choices (view, filter, sort, run): a new one refreshes the panes."""
    fleet: var[Fleet] = var(lambda: Fleet(()), always_update=True, init=False)
    """Every backend's latest state; each backend's load replaces only its own entry."""
    fetching: var[frozenset[str]] = var(frozenset())
    """The backends loading now."""
    refreshing = var(False)
    """Only loads over shown backends: they stay shown until their new lists are whole."""
    progress: var[tuple[BackendProgress, ...]] = var(())
    new_above: var[frozenset[RowKey]] = var(frozenset())
    """New checkpoints that arrived above the view while the cursor was further down."""
    dropped_marks: var[tuple[str, frozenset[Hashable]] | None] = var(None)
    """Said once in the status line: marks dropped because their checkpoints went, and the
    marks left then (a change of marks after that clears it)."""

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services
        self.row_caches: dict[str, RowCache] = {}
        self.shown_catalog: FleetCatalog | None = None
        """The fleet's runs and rows as one (None until a backend has sent some)."""
        self.whole_shown = False
        """The view shows whole snapshots (not a first load's pages so far)."""
        self.last_shown = 0.0
        self.refresh_due = False
        """Pages arrived that the panes do not show yet (a refresh is scheduled)."""
        self.complete_due = False
        """A load ended while others still ran: the view is shown whole, and sorted and
        indexed ahead of the keys, when none runs any more."""
        self.reported_problems: dict[str, set[str]] = {}
        self.feed = SnapshotFeed(services, self.post_message, lambda: self.fleet, self.row_cache_of)

    @property
    def several(self) -> bool:
        """More than one backend is open: rows and runs say which one holds them."""
        return len(self.services.connections) > 1

    def row_cache_of(self, backend: str) -> RowCache:
        """One cache per backend: its rows carry its name."""
        cache = self.row_caches.get(backend)
        if cache is None:
            cache = self.row_caches[backend] = RowCache(backend)
        return cache

    @property
    def is_showing(self) -> bool:
        """Its widgets are there to update: a worker, or a thread's callback, may finish after
        the screen began to go (as the app quits), and must then touch none of them.

        `is_attached` alone does not tell: a closing screen stays attached until its end, while
        Textual removes its children first (once its message loop stops) and cancels its
        workers only after that, so a load finishing in between would query panes that are
        gone. Not running means the children are going or gone.
        """
        return self.is_running and self.is_attached

    @property
    def runs_table(self) -> FastTable[RunsEntry]:
        return self.query_one("#runs", FastTable)

    @property
    def checkpoints_table(self) -> FastTable[CheckpointRow]:
        return self.query_one("#checkpoints", FastTable)

    def warm_up(self) -> object:
        """Sort and index the current snapshots' rows ahead of the keys (in a worker)."""
        raise NotImplementedError

    def update_details(self) -> None:
        """Show the highlighted checkpoint's details (and its run's loss curve)."""
        raise NotImplementedError

    # --- the feed's results (messages from the load workers and log threads) ----------------
    @on(LoadingChanged)
    def loading_changed(self, message: LoadingChanged) -> None:
        """The loading vars, from every backend's load."""
        self.fetching = message.loads
        first = self.first_loads()
        names = first or list(message.loads)
        several = self.several
        progress = tuple((name if several else "", message.progress.get(name)) for name in names)
        self.refreshing, self.progress = not first, progress
        if not message.loads and self.complete_due:
            # A load counts as running until just after its BackendLoaded: the last backend
            # to load may have found another one still "loading" then.
            self.complete_due = False
            self.show_complete(self.fleet)

    def first_loads(self) -> list[str]:
        """Backends loading with nothing to show yet: their pages fill in as they arrive."""
        return [name for name in self.fetching if self.fleet.state(name).snapshot is None]

    # A handler runs only while the screen takes messages, and its message loop stops before
    # its panes go; `is_showing` still guards every pane it touches, as a worker's would.
    @on(PagesArrived)
    def pages_arrived(self, message: PagesArrived) -> None:
        """Show a backend's first load's pages so far."""
        self.whole_shown = False
        state = self.fleet.state(message.backend).replace(snapshot=message.snapshot)
        self.follow(self.fleet.with_backend(message.backend, state))

    @on(BackendLoaded)
    def backend_loaded(self, message: BackendLoaded) -> None:
        state = message.state
        snapshot = state.snapshot
        assert snapshot is not None
        if not self.is_showing:
            return  # a load that ended as the screen went: nothing to show it in
        fleet = self.fleet.with_backend(state.name, state)
        if self.fetching - {state.name} and self.shown_catalog is not None:
            # Others are still loading: the panes wait for them, WORTH_A_VIEW at most (each
            # refresh sorts every row shown, and lists that end together need one), and the
            # sorting ahead of the keys waits for the last one.
            self.follow_later(fleet)
            self.complete_due = True
        else:
            self.complete_due = False
            self.show_complete(fleet)
        if snapshot.complete:  # a partial list cannot tell what is gone
            self.drop_gone_marks(state.name, snapshot)
        if snapshot.incomplete:
            self.notify(
                f"{self.named(state.name)}{snapshot.incomplete}.\nNothing is marked missing, "
                "and keep policies are off until a refresh (r) reads the whole list.",
                title="Incomplete list",
                severity="warning",
                markup=False,
            )
        self.report_problems(state.name, snapshot)

    @on(BackendFailed)
    def backend_failed(self, message: BackendFailed) -> None:
        """The backend's entry says what went wrong and what to do; the others stay shown.
        Without `keep_rows`, its rows go too (nothing can be changed through it)."""
        if not self.is_showing:
            return  # a load that failed as the screen went
        name, problem, kind = message.backend, message.problem, message.kind
        state = self.fleet.state(name).replace(error=problem, error_kind=kind, complete=False)
        if not message.keep_rows:
            state = state.replace(snapshot=None)
        self.apply_fleet(self.fleet.with_backend(name, state))
        # A refused key's message says what to do: a retry would send the same key.
        hint = "Press r to retry." if kind == UNREACHABLE else ""
        if self.shown_catalog is None:
            shown_name = name if self.several else ""
            self.checkpoints_table.empty_message = failed_text(shown_name, problem, kind)
            nobody = "no backend could" if self.several else "the backend could not"
            why = "be reached" if kind == UNREACHABLE else "be read (a key was refused)"
            self.runs_table.empty_message = f"No runs: {nobody} {why}."
        title = f"Backend {name}: error" if self.several else "Backend error"
        self.notify(f"{problem}\n{hint}".strip(), title=title, severity="error", markup=False)

    @on(LatencyMeasured)
    def latency_measured(self, message: LatencyMeasured) -> None:
        # Only the header shows it: the panes stay as they are (no re-sort of every row).
        if not self.is_showing:
            return  # the check may end as the screen goes (the app quits)
        state = self.fleet.state(message.backend).replace(latency=message.latency)
        self.fleet = self.fleet.with_backend(message.backend, state)

    @on(NewerSnapshot)
    def newer_snapshot(self, message: NewerSnapshot) -> None:
        """Show the new snapshot unless another one replaced its base meanwhile."""
        state = self.fleet.state(message.backend)
        if state.snapshot is message.base:
            snapshot = message.snapshot
            self.show_complete(
                self.fleet.with_backend(message.backend, state.replace(snapshot=snapshot))
            )

    @on(MetricsRead)
    def metrics_read(self) -> None:
        self.update_details()

    def named(self, backend: str) -> str:
        """'box1: ' before what a backend says, when several are open."""
        return f"{backend}: " if self.several else ""

    def report_problems(self, name: str, snapshot: Snapshot) -> None:
        """Say what a backend could not read (a broken run.json, an unreadable file), once
        per problem; the rows stay listed, with the reason in their metadata."""
        problems = snapshot.backend_problems
        said = self.reported_problems.get(name, set())
        new = [problem for problem in problems if problem not in said]
        self.reported_problems[name] = set(problems)
        if new:
            title = f"{self.named(name)}{count_of(len(new), 'problem')} reading the backend's files"
            self.notify(problems_notice(new), title=title, severity="warning", markup=False)

    def apply_fleet(self, fleet: Fleet) -> None:
        """Show a fleet (some backends partial, loading or failed), keeping cursor, filter,
        sort and marks."""
        self.refresh_due, self.last_shown = False, time.monotonic()
        if not self.is_showing:
            return  # a load that ended after the screen went (e.g. as the app quits)
        catalog = FleetCatalog(fleet) if fleet.snapshots() else None
        self.shown_catalog = catalog
        self.fleet = fleet
        run = self.state.run_key
        if catalog is not None and catalog.run(run) is None and not self.on_backend_row(run):
            run = self.first_run_key(catalog)
        # The same choices over the new rows: assigning the state refreshes the panes.
        self.state = replace(self.state, run_key=run)

    def first_run_key(self, catalog: FleetCatalog) -> RunKey | None:
        """Where the runs pane starts: the first backend's row (all its checkpoints below)
        when several are open, else the first run."""
        if self.several:
            return (self.fleet.names[0], "")
        return run_key(catalog.runs[0]) if catalog.runs else None

    def on_backend_row(self, key: RunKey | None) -> bool:
        """`key` names a backend's own row in the runs pane (several backends only)."""
        return self.several and key is not None and key[1] == "" and key[0] in self.fleet.names

    def follow(self, fleet: Fleet) -> None:
        """Show `fleet` now if the panes have not followed for PARTIAL_EVERY seconds (or show
        nothing yet), else at the end of that time; the header counts it at once.

        Several backends send pages at once: each refresh sorts every row shown."""
        now = time.monotonic()
        if self.shown_catalog is None or now - self.last_shown >= PARTIAL_EVERY:
            self.apply_fleet(fleet)
        else:
            self.follow_later(fleet, PARTIAL_EVERY)

    def follow_later(self, fleet: Fleet, delay: float = WORTH_A_VIEW) -> None:
        """Show `fleet` in `delay` seconds, unless the panes follow sooner (more pages, or
        every load ended); the header counts it at once."""
        if self.is_showing:
            self.fleet = fleet  # the header counts it now; the panes at the next refresh
        if not self.refresh_due:
            self.refresh_due = True
            asyncio.get_running_loop().call_later(delay, self.show_pages)

    def show_pages(self) -> None:
        """The pages that arrived since the panes last followed (unless shown meanwhile)."""
        if self.refresh_due:
            self.apply_fleet(self.fleet)

    def show_complete(self, fleet: Fleet) -> None:
        """Show a fleet whose loaded backends are whole, then sort and index it ahead of the
        key presses.

        New rows stay in sight: with the cursor on the first row the view follows the top
        (as `tail -f` does); otherwise it stays and the status line counts the new rows above.
        """
        if not self.is_showing:
            return  # e.g. a change's results, or a log's new lines, as the screen went
        table = self.checkpoints_table
        at_top = table.cursor_row == 0
        before = set(map(row_key, table.rows)) if self.whole_shown else None
        self.apply_fleet(fleet)
        self.whole_shown = not self.first_loads()
        if before is not None:
            self.follow_new_rows(at_top, before)
        self.warm_up()

    def follow_new_rows(self, at_top: bool, before: set[RowKey]) -> None:
        table = self.checkpoints_table
        if at_top:
            table.move_cursor(0)
            self.new_above = frozenset()
        else:
            above = map(row_key, table.rows[: table.cursor_row])
            self.new_above = self.new_above | {key for key in above if key not in before}

    def drop_gone_marks(self, backend: str, snapshot: Snapshot) -> None:
        """Unmark checkpoints a backend no longer has (a trainer deleted a rolling one), as its
        whole `snapshot` says (whether the panes show it yet or not)."""
        table = self.checkpoints_table
        marks = {key for key in table.marks if isinstance(key, tuple) and key[0] == backend}
        if not marks:
            return
        rows = snapshot.catalog.row_by_path
        gone = {key for key in marks if (row := rows.get(key[1])) is None or row.is_missing}
        if gone:
            left = table.marks - gone
            table.set_marks(left)
            count = count_of(len(gone), "marked checkpoint")
            self.dropped_marks = (f"{count} no longer stored: unmarked", left)
