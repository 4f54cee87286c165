"""What the browse screen shows, as plain data: view, filter, sort, metric and window.

No Textual here: the screen keeps one `BrowseState` (a new one for every change of the user's
choices) and asks it for the rows to show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import repeat
from operator import attrgetter, contains
from typing import Any, Literal

from ckpt_tui.backends.fleet_view import FleetCatalog, RunKey
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.catalog.join import metric_choices
from ckpt_tui.catalog.query import (
    EXPIRING_WINDOWS,
    SORT_KEYS,
    VIEWS,
    Sort,
    ViewName,
    describe_window,
    expiring_rows,
    search_index,
    sort_rows,
)
from ckpt_tui.catalog.substring_index import SubstringIndex
from ckpt_tui.sizes import format_total, total

RunSortKey = Literal["size", "newest", "expiry", "name"]
RUN_SORT_KEYS: tuple[RunSortKey | None, ...] = (None, "size", "newest", "expiry", "name")
"""None: the order the backend lists them in."""
RUN_SORT_WORDS: dict[RunSortKey | None, tuple[str, str]] = {
    None: ("as listed", "as listed, reversed"),
    "size": ("biggest first", "smallest first"),
    "newest": ("newest first", "oldest first"),
    "expiry": ("soonest expiry first", "latest expiry first"),
    "name": ("by name A-Z", "by name Z-A"),
}


@dataclass(frozen=True)
class RunSort:
    """How the runs pane is ordered; each key starts in its natural direction (biggest first)."""

    key: RunSortKey | None = None
    reverse: bool = False

    def cycled(self) -> RunSort:
        following = RUN_SORT_KEYS[(RUN_SORT_KEYS.index(self.key) + 1) % len(RUN_SORT_KEYS)]
        return RunSort(following)

    def flipped(self) -> RunSort:
        return replace(self, reverse=not self.reverse)

    def describe(self) -> str:
        return "runs " + RUN_SORT_WORDS[self.key][self.reverse]


def newest_created(run: RunSummary) -> datetime | None:
    return max((row.created for row in run.stored_rows if row.created), default=None)


RUN_SORT_VALUES: dict[RunSortKey, tuple[Callable[[RunSummary], object], bool]] = {
    "size": (lambda run: run.size.bytes if run.stored_rows else None, True),
    "newest": (newest_created, True),
    "expiry": (attrgetter("soonest_expiry"), False),
    "name": (lambda run: run.display_name.lower(), False),
}
"""Each key's value and whether its natural direction is descending."""


def first(pair: tuple[Any, RunSummary]) -> Any:
    return pair[0]


def sort_runs(runs: Sequence[RunSummary], sort: RunSort) -> list[RunSummary]:
    """Runs in `sort` order; runs with no value for the key (no size, no expiry) go last."""
    if sort.key is None:
        return list(reversed(runs)) if sort.reverse else list(runs)
    value, descending = RUN_SORT_VALUES[sort.key]
    keyed = [(value(run), run) for run in runs]
    present = [pair for pair in keyed if pair[0] is not None]
    absent = [run for key, run in keyed if key is None]
    present.sort(key=first, reverse=descending != sort.reverse)
    return [run for _, run in present] + absent


@dataclass(frozen=True)
class BrowseState:
    """The user's choices; they survive refreshes."""

    view: ViewName = "runs"
    filter_text: str = ""
    sort: Sort = field(default_factory=Sort)
    run_sort: RunSort = field(default_factory=RunSort)
    metric: str | None = None
    window_index: int = 0
    run_key: RunKey | None = None
    """The run the runs pane highlights: (backend, run id)."""

    @property
    def window(self) -> timedelta:
        return EXPIRING_WINDOWS[self.window_index]

    def cycled_view(self) -> BrowseState:
        return replace(self, view=VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)])

    def cycled_window(self) -> BrowseState:
        """The next expiring-soon window, shown in the expiring-soon view."""
        window_index = (self.window_index + 1) % len(EXPIRING_WINDOWS)
        return replace(self, view="expiring", window_index=window_index)

    def describe(self) -> str:
        """'By run · sort created ↑ · filter "abc"' for the status line."""
        parts = {
            "runs": "By run",
            "all": "All checkpoints",
            "expiring": f"Expiring within {describe_window(self.window)}",
        }
        words = [parts[self.view]]
        if self.view == "runs" and self.run_sort.key is not None:
            words.append(self.run_sort.describe())
        words.append("soonest first" if self.view == "expiring" else f"sort {self.sort.describe()}")
        if self.filter_text:
            words.append(f"filter “{self.filter_text}”")
        return " · ".join(words)


def visible_runs(
    catalog: FleetCatalog, state: BrowseState, cache: SortedRows | None = None
) -> list[RunSummary]:
    """Runs with at least one row the filter keeps (all runs when there is no filter), in the
    runs pane's order."""
    if not state.filter_text:
        return sort_runs(catalog.runs, state.run_sort)
    needle = state.filter_text.strip().lower()
    kept = (cache or SortedRows()).runs_matching(catalog, needle)
    return sort_runs(kept, state.run_sort)


def run_matches(run: RunSummary, needle: str, with_backend: bool) -> bool:
    """Whether a filter (`needle`, lowercased) keeps `run`: by its name, or by the first of
    its rows that matches (the rows after it are not searched; a key press used to filter
    every row of every run and make a set of 100,000 (backend, run) pairs from them)."""
    if needle in run_haystack(run, with_backend):
        return True  # with several backends this covers the backend's name too
    # A needle holding the NUL between a backend's name and a row's text (not typed, but
    # pasteable) can only match the two together.
    whole = with_backend and "\x00" in needle
    texts = map(backend_haystack if whole else HAYSTACK, run.rows)
    return any(map(contains, texts, repeat(needle)))


HAYSTACK = attrgetter("haystack")


def run_haystack(run: RunSummary, with_backend: bool) -> str:
    """What a filter matches a run by: its name, and its backend's when several are open."""
    name = run.display_name.lower()
    return f"{run.backend.lower()}\x00{name}" if with_backend else name


def backend_haystack(row: CheckpointRow) -> str:
    """A row's search text with its backend's name in front (`/box1` finds box1's rows); the
    NUL keeps a query from matching across the two."""
    return f"{row.backend.lower()}\x00{row.haystack}"


def rows_index(
    catalog: FleetCatalog, rows: Sequence[CheckpointRow]
) -> SubstringIndex[CheckpointRow]:
    """An index for filtering `rows`; across several backends it matches backend names too."""
    if catalog.several:
        return SubstringIndex(rows, backend_haystack, lowercased=True)
    return search_index(rows)


Orders = dict[tuple[object, ...], SubstringIndex[CheckpointRow]]
"""Each view's rows in order, by (view, run, sort), ready to filter."""


class SortedRows:
    """Each view's rows in sort order, kept per view and sort until the catalog changes.

    A filter keeps order, so typing a filter re-filters this list (through its SubstringIndex)
    instead of sorting 100,000 rows again on every key.
    """

    def __init__(self) -> None:
        # The catalog and every order asked for since it arrived, swapped as one tuple so a
        # warming thread can never file an old catalog's order under a new one. Cycling the
        # sort key or flipping it back then costs nothing (a 100,000-row sort is 10-40 ms of a
        # 50 ms key press).
        self._current: tuple[FleetCatalog | None, Orders] = (None, {})
        self._widths: tuple[FleetCatalog | None, dict[tuple[object, ...], dict[str, int]]] = (
            None,
            {},
        )
        self._runs_found: tuple[FleetCatalog | None, str, list[RunSummary]] = (None, "", [])

    @staticmethod
    def key_of(catalog: FleetCatalog, state: BrowseState) -> tuple[object, ...]:
        sort = current_sort(catalog, state)
        return (state.view, state.run_key if state.view == "runs" else None, sort)

    @staticmethod
    def compute(catalog: FleetCatalog, state: BrowseState) -> list[CheckpointRow]:
        if state.view == "runs":
            key = state.run_key
            run = catalog.run(key)
            if run is None and key is not None and key[1] == "":  # a backend's own row
                rows = [row for row in catalog.rows if row.backend == key[0]]
            else:
                rows = run.rows if run else []
        else:
            rows = catalog.rows
        return rows if state.view == "expiring" else sort_rows(rows, current_sort(catalog, state))

    def orders(self, catalog: FleetCatalog) -> Orders:
        """The orders kept for `catalog`, starting afresh when it is new (UI thread only)."""
        current = self._current
        if current[0] is not catalog:
            current = self._current = (catalog, {})
        return current[1]

    def index(self, catalog: FleetCatalog, state: BrowseState) -> SubstringIndex[CheckpointRow]:
        """The current view's rows in order, ready to filter."""
        orders = self.orders(catalog)
        key = self.key_of(catalog, state)
        found = orders.get(key)
        if found is None:
            found = orders[key] = rows_index(catalog, self.compute(catalog, state))
        return found

    def widths(
        self,
        catalog: FleetCatalog,
        state: BrowseState,
        measure: Callable[[Sequence[CheckpointRow]], dict[str, int]],
    ) -> dict[str, int]:
        """`measure` of the current view's rows before the filter, once per view (its sort
        changes no width): columns keep their widths while a filter is typed."""
        if self._widths[0] is not catalog:
            self._widths = (catalog, {})
        key = (state.view, state.run_key if state.view == "runs" else None)
        found = self._widths[1].get(key)
        if found is None:
            found = self._widths[1][key] = measure(self.index(catalog, state).rows)
        return found

    def runs_matching(self, catalog: FleetCatalog, needle: str) -> list[RunSummary]:
        """The runs a filter (`needle`, lowercased) keeps, in catalog order. While the user
        types, a needle holding the last one only searches the runs the last one kept."""
        last_catalog, last_needle, last_kept = self._runs_found
        narrowing = last_catalog is catalog and last_needle and last_needle in needle
        several = catalog.several
        runs = last_kept if narrowing else catalog.runs
        kept = [run for run in runs if run_matches(run, needle, several)]
        self._runs_found = (catalog, needle, kept)
        return kept

    def warm(self, catalog: FleetCatalog, state: BrowseState) -> None:
        """Sort the all-checkpoints view by every key, both ways, ahead of the key presses.

        Meant for a worker thread: it only adds to `catalog`'s orders while that catalog is
        still the current one, and never replaces the current one.
        """
        for key in SORT_KEYS:
            for reverse in (False, True):
                probe = replace(state, view="all", sort=Sort(key, reverse, state.sort.metric))
                cache_key = self.key_of(catalog, probe)
                current, orders = self._current
                if current is not catalog:
                    return
                if cache_key not in orders:
                    orders.setdefault(cache_key, rows_index(catalog, self.compute(catalog, probe)))
                orders[cache_key].haystacks()


def visible_rows(
    catalog: FleetCatalog, state: BrowseState, now: datetime, cache: SortedRows | None = None
) -> Sequence[CheckpointRow]:
    """The checkpoint table's rows for the current view, filtered and ordered (the index's
    own tuple, not a copy, when the filter keeps every row: the table keeps it as it is)."""
    rows = (cache or SortedRows()).index(catalog, state).matches(state.filter_text)
    if state.view == "expiring":
        return expiring_rows(rows, now, state.window)
    return rows


def counts_text(
    catalog: FleetCatalog,
    state: BrowseState,
    now: datetime,
    cache: SortedRows,
    rows: Sequence[CheckpointRow],
) -> str:
    """What the status line counts: how many the expiring-soon view holds and their size;
    with a filter, how many of the view's rows match, and which rows those are ('in RUN',
    'on BACKEND', 'on 2 backends'): by run, one run's or backend's; else every backend's."""
    parts = []
    if state.view == "expiring":
        size = format_total(total(row.size for row in rows))
        parts.append(f"{len(rows):,} expiring · {size}")
    if state.filter_text:
        every = cache.index(catalog, state).rows  # the view's rows before the filter
        whole = len(expiring_rows(every, now, state.window) if state.view == "expiring" else every)
        scope = counted_scope(catalog, state)
        parts.append(f"{len(rows):,} of {whole:,}{' ' if scope else ''}{scope} match")
    return " · ".join(parts)


def counted_scope(catalog: FleetCatalog, state: BrowseState) -> str:
    """Whose rows 'N of M match' counts: the highlighted run's or backend's in the by-run
    view, every backend's elsewhere ('' when there is one backend and no run to name)."""
    if state.view == "runs":
        key = state.run_key
        run = catalog.run(key)
        if run is not None:
            return f"in {run.display_name}"
        return f"on {key[0]}" if key is not None and key[1] == "" else ""
    names = catalog.fleet.names
    return f"on all {len(names)} backends" if catalog.several else ""


def current_metric(catalog: FleetCatalog, state: BrowseState) -> str | None:
    """The metric column's key: the user's choice, else the run's (or catalog's) first."""
    if state.metric is not None:
        return state.metric
    if state.view == "runs" and state.run_key:
        run = catalog.run(state.run_key)
        if run and run.metric_keys:
            return run.metric_keys[0]
    choices = metric_choices(run.metric_keys for run in catalog.runs)
    return choices[0] if choices else None


def current_sort(catalog: FleetCatalog, state: BrowseState) -> Sort:
    if state.sort.key != "metric":
        return state.sort
    return Sort("metric", state.sort.reverse, current_metric(catalog, state))


def next_metric(catalog: FleetCatalog, state: BrowseState) -> str | None:
    choices = metric_choices(run.metric_keys for run in catalog.runs)
    if not choices:
        return None
    now = current_metric(catalog, state)
    return choices[(choices.index(now) + 1) % len(choices)] if now in choices else choices[0]
