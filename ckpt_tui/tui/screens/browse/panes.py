"""Filling the browse screen's two tables from a catalog and the user's choices, and what a
click on their headers sorts by."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from datetime import datetime
from typing import Any

from ckpt_tui.backends import Fleet
from ckpt_tui.backends.fleet_view import FleetCatalog
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.catalog.query import Sort, SortKey
from ckpt_tui.tui.view import render
from ckpt_tui.tui.view.groups import RunsEntry, grouped_runs
from ckpt_tui.tui.view.state import (
    BrowseState,
    RunSort,
    RunSortKey,
    SortedRows,
    counts_text,
    current_metric,
    visible_rows,
    visible_runs,
)
from ckpt_tui.tui.widgets import Column, FastTable

MAX_BACKEND_WIDTH = 16
"""The backend column is as wide as the longest backend name, up to this."""
RUN_SORT_COLUMNS: dict[str, RunSortKey] = {"name": "name", "size": "size", "expiry": "expiry"}
"""The runs pane's headers a click sorts by."""
RUN_SORT_INDICATOR = {key: column for column, key in RUN_SORT_COLUMNS.items()}
CHECKPOINT_SORT_COLUMNS: dict[str, SortKey] = {
    "name": "name",
    "run": "name",
    "size": "size",
    "created": "created",
    "expires": "expiry",
    "metric": "metric",
}
"""The checkpoints pane's headers a click sorts by (Run: the name sort, which goes by run
first wherever the Run column shows)."""
SORT_COLUMNS: dict[SortKey, str] = {
    "name": "name",
    "size": "size",
    "created": "created",
    "expiry": "expires",
    "metric": "metric",
}


def sorted_column(state: BrowseState, with_run: bool) -> str | None:
    """The column the checkpoints are ordered by, which the ▲/▼ marks and no narrow terminal
    drops: the name sort orders by run first, so Run when it shows; none when expiring."""
    if state.view == "expiring":
        return None
    if state.sort.key == "name" and with_run:
        return "run"
    return SORT_COLUMNS[state.sort.key]


def clicked_run_sort(state: BrowseState, key: RunSortKey) -> BrowseState:
    """A click on a runs header sorts by it; a second click reverses."""
    sort = state.run_sort
    return replace(state, run_sort=sort.flipped() if sort.key == key else RunSort(key))


def clicked_sort(state: BrowseState, key: SortKey) -> BrowseState:
    """A click on a checkpoints header sorts by it; a second click reverses."""
    sort = state.sort
    new = sort.flipped() if sort.key == key else Sort(key, False, sort.metric)
    return replace(state, sort=new)


def set_columns(table: FastTable[Any], columns: list[Column]) -> None:
    """Change a table's columns only when they differ (a change repaints every line)."""
    if tuple(columns) != table.columns:
        table.set_columns(columns)


def show_panes(
    runs_table: FastTable[RunsEntry],
    table: FastTable[CheckpointRow],
    catalog: FleetCatalog | None,
    state: BrowseState,
    now: datetime,
    sorted_rows: SortedRows,
    screen_width: int,
    priced: bool = False,
    *,
    same_look: bool = False,
) -> tuple[str | None, str]:
    """Fill both tables for `state`; the metric column's key and the status line's counts.

    With several backends the runs pane's rows come from `show_groups`; `priced`: some
    backend has a storage rate (the runs pane shows costs); `same_look`: only the filter
    changed since the last fill, so the checkpoints shown before keep their drawn lines.
    """
    runs_table.display = state.view == "runs"
    # A pane that was hidden (views 2 and 3) has no width until the next layout: the
    # screen's is the one it will get, so the Base model column is not dropped.
    width = max(runs_table.size.width or screen_width, 40)
    run_columns = render.run_columns(priced)
    set_columns(runs_table, render.fit_columns(run_columns, width, render.RUN_DROPS))
    if catalog is None:
        return None, ""
    metric_key = current_metric(catalog, state)
    if runs_table.display:
        if not catalog.several:
            runs_table.set_rows(visible_runs(catalog, state, sorted_rows))
        run_sort = state.run_sort
        column = RUN_SORT_INDICATOR.get(run_sort.key) if run_sort.key else None
        runs_table.set_sort_indicator(column, run_sort.reverse != (column == "size"))
    spanning = state.view != "runs"  # the backend column when rows of several share the table
    backends = catalog.fleet.names if spanning and catalog.several else ()
    backend_width = min(max(map(len, backends), default=0), MAX_BACKEND_WIDTH)
    columns = render.checkpoint_columns(metric_key, spanning, backend_width)
    rows = visible_rows(catalog, state, now, sorted_rows)
    width = max(table.size.width - 2, 40)  # a scrollbar may take 2
    ordered_by = sorted_column(state, spanning)
    # The sorted column goes last but for the kind (without which sampler and state rows of
    # one step look alike): at 120 columns Created shows while sorting by it, at 80 not.
    drops = [key for key in render.CHECKPOINT_DROPS if key not in (ordered_by, "kind")]
    drops += [key for key in (ordered_by, "kind") if key in render.CHECKPOINT_DROPS]
    # Widths from every row of the view before its filter (kept while typing one); the
    # expiring view's own rows are its window's, not what its index holds.
    expiring = state.view == "expiring"
    measure = render.wanted_widths
    wants = measure(rows) if expiring else sorted_rows.widths(catalog, state, measure)
    set_columns(table, render.fit_columns(columns, width, drops, wants))
    table.set_rows(rows, same_look=same_look)
    table.set_sort_indicator(ordered_by, state.sort.reverse)
    return metric_key, counts_text(catalog, state, now, sorted_rows, rows)


def show_groups(
    runs_table: FastTable[RunsEntry],
    fleet: Fleet,
    catalog: FleetCatalog | None,
    state: BrowseState,
    sorted_rows: SortedRows,
    folded: Collection[str],
    loading: Collection[str],
) -> None:
    """The runs pane over several backends: each backend's row, loaded or not, its runs
    (filtered and sorted as one backend's would be) below it unless folded."""
    runs = visible_runs(catalog, state, sorted_rows) if catalog is not None else []
    filtering = bool(state.filter_text)
    runs_table.set_rows(grouped_runs(fleet, runs, folded, loading, filtering))
