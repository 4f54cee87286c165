"""Bringing every backend's snapshot to the browse screen: each backend loads on its own (its
first load page by page), refreshes, live training logs, and the loss curves' metrics.jsonl.

`SnapshotFeed` is a plain object the browse screen owns; the screen runs its methods in its
workers (a worker belongs to a Textual node), one per backend. The feed only loads and reads:
it posts what it found to the screen as messages (`messages.py`), and the screen shows them,
so one slow or failing backend never holds back the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from textual.message import Message

from ckpt_tui.backends import Connection, Fleet
from ckpt_tui.backends.identity import one_store_message, store_id_of
from ckpt_tui.backends.load import error_kind, failure_text, measure_latency, resolve_rate
from ckpt_tui.catalog.log_refresh import refresh_log_dirs, refresh_metrics
from ckpt_tui.catalog.partial_views import PartialSpacing
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import Snapshot, load_snapshot
from ckpt_tui.client import ClientError
from ckpt_tui.training.logdirs import METRICS_FILE_NAME, read_metrics
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

SHOWN_PROBLEMS = 3
"""A notice of problems names this many; `ckpt-tui ls` lists them all."""


def problems_notice(problems: list[str]) -> str:
    shown = "\n".join(problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    return shown + (f"\n... and {more} more: `ckpt-tui ls` lists them all" if more > 0 else "")


async def cancelled(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait for it to end; its outcome no longer matters."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


class ShownOnceChecked:
    """Hands pages on to `show` only once `checked` is called; until then it keeps the
    latest (each is a snapshot of every page so far), to hand on at that moment."""

    def __init__(self, show: Callable[[Snapshot], None]) -> None:
        self.show = show
        self.held: Snapshot | None = None
        self.passed = False

    def page(self, snapshot: Snapshot) -> None:
        if self.passed:
            self.show(snapshot)
        else:
            self.held = snapshot

    def checked(self, show_held: bool = True) -> None:
        """Pages may pass from now on; the latest held one is shown unless not `show_held`
        (the whole list is in already, and shown next)."""
        self.passed = True
        if self.held is not None and show_held:
            self.show(self.held)
        self.held = None


class SnapshotFeed:
    """Loads each backend's snapshots and posts them, with `post`, to the screen they feed.

    `fleet` gives the fleet the screen shows (read only: a backend shown already keeps its
    rows until its new list is whole), `row_cache_of` each backend's row cache."""

    def __init__(
        self,
        services: Services,
        post: Callable[[Message], object],
        fleet: Callable[[], Fleet],
        row_cache_of: Callable[[str], RowCache],
    ) -> None:
        self.services = services
        self.post = post
        self.fleet = fleet
        self.row_cache = row_cache_of
        self.progress: dict[str, tuple[int, int]] = {}
        self.loads: dict[str, int] = {}
        """Each backend loading now, with its load's number (a restarted load is a new one)."""
        self.loads_started = 0
        self.store_ids: dict[str, set[str]] = {}
        """Every store id each backend shown has reported (one store is one backend: see
        `one_store`); a bucket that keeps no id reports one made from its latest listing."""
        self.partials = PartialSpacing()
        """One clock for every backend's partial snapshots: the screen follows them all."""
        self.refused: dict[str, str] = {}
        """Backends refused as a store another backend shows, and why: for the app's life."""

    @property
    def several(self) -> bool:
        return len(self.services.connections) > 1

    # --- loading -----------------------------------------------------------------------------
    def loading_changed(self) -> None:
        self.post(LoadingChanged(frozenset(self.loads), dict(self.progress)))

    async def load(self, name: str) -> None:
        """Fetch one backend; its rows fill in as pages arrive, and no backend waits for it.

        A refresh keeps showing the backend's current snapshot until the new one is whole, so
        rows, totals and the cursor never fall back to a first page's worth.
        """
        self.loads_started += 1
        number = self.loads[name] = self.loads_started
        self.progress.pop(name, None)
        self.loading_changed()
        connection = self.services.connections[name]
        if connection.problem is not None:  # e.g. its key variable is unset: nothing is sent
            self.post(BackendFailed(name, connection.problem))
            return
        shown = ShownOnceChecked(partial(self.page, name))
        fill_in = None if self.fleet().state(name).snapshot else shown.page
        rating = asyncio.ensure_future(resolve_rate(connection))  # side by side with the load
        # The list is read while the store id is asked (a read writes nothing), so several
        # backends start as soon as one; no page is shown before the id has been compared.
        loading = asyncio.ensure_future(
            load_snapshot(
                connection.client,
                self.services.log_settings,
                partial(self.on_progress, name),
                fill_in,
                self.row_cache(name),
                own_logs_only=self.several,
                spacing=self.partials,
            )
        )
        try:
            if self.several and (one_store := await self.one_store(name, connection)):
                self.post(BackendFailed(name, one_store, keep_rows=False))
                return
            shown.checked(show_held=not loading.done())
            snapshot = await loading
            rate, source = await rating
        except ClientError as exc:
            self.post(BackendFailed(name, failure_text(exc), error_kind(exc)))
        else:
            state = (
                self.fleet()
                .state(name)
                .replace(
                    snapshot=snapshot,
                    error=None,
                    complete=snapshot.complete,
                    rate=rate,
                    rate_source=source,
                )
            )
            self.post(BackendLoaded(state))
            # The list is whole: the view need not wait for what follows (with several
            # backends, the complete view waits until none is loading).
            self.end_load(name, number)
            if await asyncio.to_thread(refresh_metrics, self.services.metrics_cache):
                self.post(MetricsRead())  # a refresh reads the loss curves' new lines too
            # The header's latency follows one request later.
            await self.measure(name, connection)
        finally:
            # A refused backend's load, or one whose worker was cancelled or failed
            # meanwhile (a new load, the app quitting, an error no client catches), ends
            # here; the outcomes of its list and its rate, errors included, are taken so
            # none is left unretrieved.
            await cancelled(loading)
            await cancelled(rating)
            self.end_load(name, number)

    def end_load(self, name: str, number: int) -> None:
        """Load `number` of backend `name` no longer counts as loading (unless a newer load
        of it began meanwhile)."""
        if self.loads.get(name) == number:
            del self.loads[name]
            self.loading_changed()

    def page(self, name: str, snapshot: Snapshot) -> None:
        self.post(PagesArrived(name, snapshot))

    async def one_store(self, name: str, connection: Connection) -> str | None:
        """Why backend `name` is a store another backend shows already (its store id says
        so), or None: one store is shown, and changed, through one backend only."""
        if name in self.refused:  # what a store is does not change while the app runs
            return self.refused[name]
        store_id = await store_id_of(connection)
        if store_id is None:
            return None
        for other, known in self.store_ids.items():
            if store_id in known and other != name:
                first = self.services.connections[other].backend
                why = one_store_message(first, connection.backend, f"store id {store_id}")
                self.refused[name] = why
                return why
        self.store_ids.setdefault(name, set()).add(store_id)
        return None

    def on_progress(self, name: str, loaded: int, total: int) -> None:
        self.progress[name] = (loaded, total)
        self.loading_changed()

    async def measure(self, name: str, connection: Connection) -> None:
        try:
            latency = await measure_latency(connection.client, self.services.clock)
        except ClientError:
            return  # it answered the whole load: one failed extra request changes nothing
        self.post(LatencyMeasured(name, latency))

    # --- live training logs (these run in worker threads) -------------------------------------
    def watch_log_dirs(self) -> None:
        """Re-read training logs that grew (a run writing checkpoints right now), and the
        tail of every metrics.jsonl shown so far (the loss curve is live)."""
        for state in self.fleet().states:
            snapshot = state.snapshot
            if snapshot is not None and state.name not in self.loads:
                joined = refresh_log_dirs(snapshot, self.row_cache(state.name))
                if joined is not None:
                    self.post(NewerSnapshot(state.name, snapshot, joined))
        if refresh_metrics(self.services.metrics_cache):
            self.post(MetricsRead())

    def read_metrics(self, folder: Path) -> None:
        """Read a log dir's metrics.jsonl (blocking), then show it."""
        self.services.metrics_cache[str(folder)] = read_metrics(folder / METRICS_FILE_NAME)
        self.post(MetricsRead())
