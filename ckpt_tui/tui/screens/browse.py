"""The main screen: runs, checkpoints and details, in three switchable views."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input, Static

from ckpt_tui.catalog import Catalog, CheckpointRow, RunSummary
from ckpt_tui.catalog.join import RowCache
from ckpt_tui.catalog.query import Sort, SortKey
from ckpt_tui.catalog.snapshot import Snapshot, backend_problems, load_snapshot
from ckpt_tui.client import ClientError
from ckpt_tui.training.logdirs import METRICS_FILE_NAME, Metrics, read_metrics
from ckpt_tui.tui import render
from ckpt_tui.tui.commands import BROWSE_COMMANDS, bindings
from ckpt_tui.tui.log_refresh import refresh_log_dirs, refresh_metrics
from ckpt_tui.tui.state import (
    BrowseState,
    RunSort,
    RunSortKey,
    SortedRows,
    counts_text,
    current_metric,
    next_metric,
    visible_rows,
    visible_runs,
)
from ckpt_tui.tui.status import header_text, status_text
from ckpt_tui.tui.widgets import Cell, Column, FastTable
from ckpt_tui.tui.widgets.details import DetailsPane
from ckpt_tui.tui.widgets.filter_box import FilterBox

if TYPE_CHECKING:
    from ckpt_tui.tui.app import CkptApp

SHORT = 30
"""Fewer lines than this: the runs and details panes get shorter."""
TINY = 22
"""Fewer lines than this: the details pane is hidden, so the checkpoints keep their rows."""
MIN_WIDTH, MIN_HEIGHT = 60, 16
"""Below this the screen says it is too small instead of showing cut panes."""
WIDE = 120
"""Narrower terminals get the compact footer (less space between hints)."""
RUN_SORT_COLUMNS: dict[str, RunSortKey] = {"name": "name", "size": "size", "expiry": "expiry"}
"""The runs pane's headers a click sorts by."""
RUN_SORT_INDICATOR = {key: column for column, key in RUN_SORT_COLUMNS.items()}
CHECKPOINT_SORT_COLUMNS: dict[str, SortKey] = {
    "name": "name",
    "size": "size",
    "created": "created",
    "expires": "expiry",
    "metric": "metric",
}
"""The checkpoints pane's headers a click sorts by."""
SHOWN_PROBLEMS = 3
"""A notice of problems names this many; `ckpt-tui ls` lists them all."""


def problems_notice(problems: list[str]) -> str:
    shown = "\n".join(problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    return shown + (f"\n... and {more} more: `ckpt-tui ls` lists them all" if more > 0 else "")


def set_columns(table: FastTable[Any], columns: list[Column]) -> None:
    """Change a table's columns only when they differ (a change repaints every line)."""
    if tuple(columns) != table.columns:
        table.set_columns(columns)


class BrowseScreen(Screen[None]):
    """Browse runs and checkpoints; the actions screen extends this with changes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(BROWSE_COMMANDS),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.state = BrowseState()
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self.progress: tuple[int, int] | None = None
        self.fetching = False
        self.refreshing = False
        """A load over a complete view: it stays shown until the new snapshot is whole."""
        self.metric_key: str | None = None
        self.whole_shown = False
        """The view shows a complete snapshot (not the first load's pages so far)."""
        self.new_above: set[str] = set()
        """New checkpoints that arrived above the view while the cursor was further down."""
        self.dropped_marks: tuple[str, frozenset[Hashable]] | None = None
        """Said once in the status line: marks dropped because their checkpoints went, and the
        marks left then (a change of marks after that clears it)."""
        self.view_counts = ""
        """'12 of 47 match', '3 expiring · 4.2 GiB': computed with the rows, shown in the status."""
        self.sorted_rows = SortedRows()
        self.row_cache = RowCache()
        self.reported_problems: set[str] = set()

    @property
    def ckpt_app(self) -> CkptApp:
        from ckpt_tui.tui.app import CkptApp

        assert isinstance(self.app, CkptApp)
        return self.app

    @property
    def catalog(self) -> Catalog | None:
        return None if self.snapshot is None else self.snapshot.catalog

    # --- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="header-line")
        yield Static(id="too-small")
        with Vertical(id="body"):
            yield FastTable[RunSummary](
                render.RUN_COLUMNS,
                lambda run: self.run_cells(run),
                attrgetter("run_id"),  # C-level: set_rows finds the cursor's key in O(n)
                id="runs",
            )
            with Vertical(id="lower"):
                yield FastTable[CheckpointRow](
                    render.checkpoint_columns(None, False),
                    lambda row: self.checkpoint_cells(row),
                    attrgetter("tinker_path"),  # C-level: ~2 ms less per 100,000-row set_rows
                    row_style=lambda row: "dim" if row.is_missing else None,
                    id="checkpoints",
                )
                yield DetailsPane(id="details")
        yield FilterBox(
            self.leave_filter,
            id="filter",
            placeholder="filter by name, path or metadata; enter keeps it, esc clears",
        )
        yield Static(id="status-line")
        yield Footer()

    @property
    def runs_table(self) -> FastTable[RunSummary]:
        return self.query_one("#runs", FastTable)

    @property
    def checkpoints_table(self) -> FastTable[CheckpointRow]:
        return self.query_one("#checkpoints", FastTable)

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.set_focus(self.checkpoints_table)
        self.update_chrome()
        self.load()
        interval = self.ckpt_app.poll_interval
        if interval > 0:
            self.set_interval(interval, self.poll_server)
        self.set_interval(self.ckpt_app.log_check_interval, self.watch_log_dirs)

    def on_resize(self) -> None:
        width, height = self.size
        self.set_class(height < SHORT, "-narrow")
        self.set_class(height < TINY, "-tiny")
        too_small = width < MIN_WIDTH or height < MIN_HEIGHT
        self.set_class(too_small, "-too-small")
        if too_small:
            need = f"terminal too small (need {MIN_WIDTH}x{MIN_HEIGHT}): this one is"
            self.query_one("#too-small", Static).update(f"{need} {width}x{height}")
        self.query_one(Footer).compact = self.size.width < WIDE
        self.refresh_views()

    # --- cells -------------------------------------------------------------------------------
    def run_cells(self, run: RunSummary) -> list[Cell]:
        keys = [column.key for column in self.runs_table.columns]
        return render.run_cells(run, self.ckpt_app.clock.now(), keys)

    def checkpoint_cells(self, row: CheckpointRow) -> list[Cell]:
        keys = [column.key for column in self.checkpoints_table.columns]
        return render.checkpoint_cells(row, self.metric_key, self.ckpt_app.clock.now(), keys)

    # --- loading -----------------------------------------------------------------------------
    @work(exclusive=True, group="load")
    async def load(self) -> None:
        """Fetch everything; the screen fills in as pages arrive and never blocks on the network."""
        self.fetching, self.progress = True, None
        self.update_chrome()
        # The first load fills the screen in page by page; a refresh keeps showing the
        # current snapshot until the new one is whole, so rows, totals and the cursor never
        # fall back to a first page's worth.
        self.refreshing = self.snapshot is not None
        fill_in = None if self.refreshing else self.apply_page
        try:
            client = await self.ckpt_app.get_client()
            snapshot = await load_snapshot(
                client, self.ckpt_app.log_settings, self.on_progress, fill_in, self.row_cache
            )
        except ClientError as exc:
            self.show_error(exc.message)
        else:
            self.error = None
            self.show_complete(snapshot)
            if snapshot.complete:  # a partial list cannot tell what is gone
                self.drop_gone_marks()
            if await asyncio.to_thread(refresh_metrics, self.ckpt_app.metrics_cache):
                self.update_details()  # a refresh reads the loss curves' new lines too
            if snapshot.incomplete:
                self.notify(
                    f"{snapshot.incomplete}.\nNothing is marked missing, and keep policies are "
                    "off until a refresh (r) reads the whole list.",
                    title="Incomplete list",
                    severity="warning",
                    markup=False,
                )
            self.report_problems(snapshot)
        finally:
            self.fetching = False
            self.update_chrome()

    @work(exclusive=True, group="warm", thread=True, description="sort and index the rows")
    def warm_up(self) -> None:
        """Build the current snapshot's search texts and sort orders now, off the UI thread.

        Otherwise the first character typed into the filter builds 100,000 search texts
        (~150 ms), and each new sort key sorts 100,000 rows inside a key press.
        """
        self.warm(self.catalog)

    def warm(self, catalog: Catalog | None) -> None:
        if catalog is not None:
            self.sorted_rows.warm(catalog, self.state)

    def on_progress(self, loaded: int, total: int) -> None:
        self.progress = (loaded, total)
        self.update_chrome()

    def show_error(self, message: str) -> None:
        self.error = message
        hint = "Press r to retry."
        if self.snapshot is None:
            self.checkpoints_table.empty_message = f"{hint} {message}"
            self.runs_table.empty_message = "No runs: the backend could not be reached."
        self.notify(f"{message}\n{hint}", title="Backend error", severity="error", markup=False)

    def report_problems(self, snapshot: Snapshot) -> None:
        """Say what the backend could not read (a broken run.json, an unreadable file), once
        per problem; the rows stay listed, with the reason in their metadata."""
        problems = backend_problems(snapshot.runs, snapshot.checkpoints)
        new = [problem for problem in problems if problem not in self.reported_problems]
        self.reported_problems = set(problems)
        if new:
            title = f"{len(new)} problem{'s' if len(new) > 1 else ''} reading the backend's files"
            self.notify(problems_notice(new), title=title, severity="warning", markup=False)

    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Show a (possibly partial) snapshot, keeping cursor, filter, sort and marks."""
        self.snapshot = snapshot
        if self.state.run_id is None or snapshot.catalog.run(self.state.run_id) is None:
            self.state.run_id = snapshot.catalog.runs[0].run_id if snapshot.catalog.runs else None
        self.checkpoints_table.empty_message = "No checkpoints here."
        self.runs_table.empty_message = "No runs."
        self.refresh_views()

    def apply_page(self, snapshot: Snapshot) -> None:
        """Show the first load's pages so far."""
        self.whole_shown = False
        self.apply_snapshot(snapshot)

    def show_complete(self, snapshot: Snapshot) -> None:
        """Show a whole snapshot, then sort and index it ahead of the key presses.

        New rows stay in sight: with the cursor on the first row the view follows the top
        (as `tail -f` does); otherwise it stays and the status line counts the new rows above.
        """
        table = self.checkpoints_table
        at_top = table.cursor_row == 0
        before = set(map(attrgetter("tinker_path"), table.rows)) if self.whole_shown else None
        self.apply_snapshot(snapshot)
        self.whole_shown = True
        if before is not None:
            self.follow_new_rows(at_top, before)
        if not snapshot.catalog.runs:
            nothing = self.ckpt_app.backend.nothing_found()
            self.runs_table.empty_message = self.checkpoints_table.empty_message = nothing
        self.warm_up()

    def follow_new_rows(self, at_top: bool, before: set[str]) -> None:
        table = self.checkpoints_table
        if at_top:
            table.move_cursor(0)
            self.new_above.clear()
        else:
            self.new_above.update(
                row.tinker_path
                for row in table.rows[: table.cursor_row]
                if row.tinker_path not in before
            )
        self.update_chrome()

    def drop_gone_marks(self) -> None:
        """Unmark checkpoints the server no longer has (a trainer deleted a rolling one)."""
        catalog, table = self.catalog, self.checkpoints_table
        marks = table.marks
        if catalog is None or not marks:
            return
        rows = catalog.row_by_path
        gone = {key for key in marks if (row := rows.get(str(key))) is None or row.is_missing}
        if gone:
            left = marks - gone
            table.set_marks(left)
            count = f"{len(gone)} marked checkpoint{'s' if len(gone) > 1 else ''}"
            self.dropped_marks = (f"{count} no longer stored: unmarked", left)
            self.update_chrome()

    def poll_server(self) -> None:
        if not self.fetching:
            self.load()

    @work(exclusive=True, group="logs", thread=True)
    def watch_log_dirs(self) -> None:
        """Re-read training logs that grew (a run writing checkpoints right now), and the
        tail of every metrics.jsonl shown so far (the loss curve is live)."""
        snapshot = self.snapshot
        if snapshot is not None and not self.fetching:
            joined = refresh_log_dirs(snapshot, self.row_cache)
            if joined is not None:
                self.app.call_from_thread(self.show_newer, snapshot, joined)
        if refresh_metrics(self.ckpt_app.metrics_cache):
            self.app.call_from_thread(self.update_details)

    def show_newer(self, base: Snapshot, snapshot: Snapshot) -> None:
        """Show `snapshot`, made from `base`, unless another one replaced `base` meanwhile."""
        if self.snapshot is base:
            self.show_complete(snapshot)

    # --- showing -----------------------------------------------------------------------------
    def refresh_views(self) -> None:
        """Recompute what every pane shows from the snapshot and the browse state."""
        catalog = self.catalog
        runs_table, table = self.runs_table, self.checkpoints_table
        runs_table.display = self.state.view == "runs"
        # A pane that was hidden (views 2 and 3) has no width until the next layout: the
        # screen's is the one it will get, so the Base model column is not dropped.
        width = max(runs_table.size.width or self.size.width, 40)
        set_columns(runs_table, render.fit_columns(render.RUN_COLUMNS, width, render.RUN_DROPS))
        if catalog is not None:
            self.metric_key = current_metric(catalog, self.state)
            if runs_table.display:
                runs_table.set_rows(visible_runs(catalog, self.state, self.sorted_rows))
                run_sort = self.state.run_sort
                column = RUN_SORT_INDICATOR.get(run_sort.key) if run_sort.key else None
                runs_table.set_sort_indicator(column, run_sort.reverse != (column == "size"))
            columns = render.checkpoint_columns(self.metric_key, self.state.view != "runs")
            now = self.ckpt_app.clock.now()
            rows = visible_rows(catalog, self.state, now, self.sorted_rows)
            width = max(table.size.width - 2, 40)  # a scrollbar may take 2
            wants = render.wanted_widths(rows)
            set_columns(table, render.fit_columns(columns, width, wants=wants))
            table.set_rows(rows)
            self.view_counts = counts_text(catalog, self.state, now, self.sorted_rows, rows)
            indicator = None if self.state.view == "expiring" else self.state.sort.key
            table.set_sort_indicator(
                "metric" if indicator == "metric" else indicator, self.state.sort.reverse
            )
        self.update_details()
        self.update_chrome()

    def update_chrome(self) -> None:
        """The header line (totals) and the status line (view, marks, progress, errors)."""
        app = self.ckpt_app
        now = app.clock.now()
        backend = app.backend
        width = self.size.width - 2  # the line's padding
        header = header_text(
            app.describe_backend(),
            self.catalog,
            now,
            app.storage_rate,
            width,
            backend.short_name(),
            readonly=app.readonly,
        )
        # Fixed-height lines: no layout pass needed, and a layout costs ~25 ms per key press.
        self.query_one("#header-line", Static).update(header, layout=False)
        self.query_one("#status-line", Static).update(status_text(self, now), layout=False)

    def update_details(self) -> None:
        row = self.checkpoints_table.cursor_value
        catalog = self.catalog
        run = catalog.run(row.run_id) if (catalog and row) else None
        metrics = self.cached_metrics(run)
        pane = self.query_one(DetailsPane)
        pane.show(row, run, self.ckpt_app.clock.now(), metrics)
        if run is not None and run.log_dir is not None and metrics is None:
            self.read_metrics(run.log_dir.path)

    def cached_metrics(self, run: RunSummary | None) -> Metrics | None:
        if run is None or run.log_dir is None:
            return None
        return self.ckpt_app.metrics_cache.get(str(run.log_dir.path))

    @work(group="metrics", thread=True, description="read metrics.jsonl")
    def read_metrics(self, folder: Path) -> None:
        """metrics.jsonl can be large: read it off the UI thread, once per log dir."""
        self.ckpt_app.metrics_cache[str(folder)] = read_metrics(folder / METRICS_FILE_NAME)
        self.app.call_from_thread(self.update_details)

    # --- events ------------------------------------------------------------------------------
    @on(FastTable.Highlighted, "#runs")
    def run_highlighted(self, event: FastTable.Highlighted) -> None:
        run = event.row
        if isinstance(run, RunSummary) and run.run_id != self.state.run_id:
            self.state.run_id = run.run_id
            self.refresh_views()

    @on(FastTable.Highlighted, "#checkpoints")
    def checkpoint_highlighted(self) -> None:
        if self.new_above and self.checkpoints_table.cursor_row == 0:
            self.new_above.clear()  # the user went up to see them
            self.update_chrome()
        self.update_details()

    @on(FastTable.MarksChanged, "#checkpoints")
    def marks_changed(self, event: FastTable.MarksChanged) -> None:
        if self.dropped_marks is not None and event.marks != self.dropped_marks[1]:
            self.dropped_marks = None  # said once: the user has changed the marks since
        self.update_chrome()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        # The box's value now, not the event's: after escape in a burst ("/x<esc>"), the
        # change to "x" is still queued behind the clearing and must not bring "x" back.
        self.state.filter_text = event.input.value
        self.refresh_views()
        # The Input has already asked the screen for a frame (its echo), and the screen's
        # 60 fps timer paints it before the tables' own repaint requests arrive; theirs then
        # wait for the next tick, which Textual's timer places 17-33 ms later (measured: the
        # table's frame at ~40 ms at only 1k rows). Marking their regions dirty on the screen
        # now puts the filtered rows in the same frame as the echo.
        self.refresh(*(widget.region for widget in self.filter_painted_widgets()))

    def filter_painted_widgets(self) -> list[Widget]:
        """What a filter change repaints besides the Input itself."""
        widgets: list[Widget] = [self.checkpoints_table, self.query_one(DetailsPane)]
        widgets += [self.runs_table, self.query_one("#status-line", Static)]
        return [widget for widget in widgets if widget.display]

    def leave_filter(self, keep: bool) -> None:
        """Enter (keep the filter) or escape (clear it) in the filter box: back to the table."""
        if keep:
            self.query_one("#filter", Input).display = False
            self.set_focus(self.checkpoints_table)
        else:
            self.action_clear_filter()

    # --- actions -----------------------------------------------------------------------------
    async def action_quit(self) -> None:
        await self.ckpt_app.action_quit()

    def action_help(self) -> None:
        from ckpt_tui.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the filter box has focus, "/" is a character to type, not the filter key."""
        return not (action == "filter" and isinstance(self.focused, Input))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)  # now, not later: keys typed right after "/" must land in it

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.display and not self.state.filter_text:
            return
        box.value = ""
        box.display = False
        self.state.filter_text = ""
        self.set_focus(self.checkpoints_table)
        self.refresh_views()

    def sorting_runs(self) -> bool:
        """`s` and `S` sort the runs pane while it has focus, else the checkpoints."""
        return self.state.view == "runs" and self.focused is self.runs_table

    def action_cycle_sort(self) -> None:
        if self.sorting_runs():
            self.state.run_sort = self.state.run_sort.cycled()
            self.show_new_run_order()
        else:
            self.state.sort = self.state.sort.cycled()
            self.show_new_order()

    def action_reverse_sort(self) -> None:
        if self.sorting_runs():
            self.state.run_sort = self.state.run_sort.flipped()
            self.show_new_run_order()
        else:
            self.state.sort = self.state.sort.flipped()
            self.show_new_order()

    def show_new_order(self) -> None:
        """A new sort shows its first rows (the biggest, after `S` on size), not the old cursor
        row somewhere in the middle."""
        self.refresh_views()
        self.checkpoints_table.move_cursor(0)

    def show_new_run_order(self) -> None:
        """The runs' first in the new order, and its checkpoints below."""
        self.refresh_views()
        self.runs_table.move_cursor(0)

    @on(FastTable.HeaderClicked, "#runs")
    def run_header_clicked(self, event: FastTable.HeaderClicked) -> None:
        """A click on Run, Size or Next expiry sorts by it; a second click reverses."""
        key = RUN_SORT_COLUMNS.get(event.column_key)
        if key is not None:
            sort = self.state.run_sort
            same = sort.key == key
            self.state.run_sort = sort.flipped() if same else RunSort(key)
            self.show_new_run_order()

    @on(FastTable.HeaderClicked, "#checkpoints")
    def checkpoint_header_clicked(self, event: FastTable.HeaderClicked) -> None:
        """A click on a sortable column sorts by it; a second click reverses."""
        key = CHECKPOINT_SORT_COLUMNS.get(event.column_key)
        if key is not None and self.state.view != "expiring":
            sort = self.state.sort
            same = sort.key == key
            self.state.sort = sort.flipped() if same else Sort(key, False, sort.metric)
            self.show_new_order()

    def action_cycle_view(self) -> None:
        self.state.cycle_view()
        self.after_view_change()

    def action_view(self, name: str) -> None:
        if name in ("runs", "all", "expiring"):
            self.state.view = name  # type: ignore[assignment]
            self.after_view_change()

    def after_view_change(self) -> None:
        self.refresh_views()
        self.set_focus(self.checkpoints_table)

    def action_cycle_window(self) -> None:
        self.state.cycle_window()
        if self.state.view != "expiring":
            self.state.view = "expiring"
        self.refresh_views()

    def action_cycle_metric(self) -> None:
        if self.catalog is not None:
            self.state.metric = next_metric(self.catalog, self.state)
            self.refresh_views()

    def action_refresh(self) -> None:
        self.load()

    def action_copy_path(self) -> None:
        row = self.checkpoints_table.cursor_value
        if row is None:
            self.notify("No checkpoint highlighted.", severity="warning")
            return
        self.app.copy_to_clipboard(row.tinker_path)
        self.notify(f"Copied {row.tinker_path}", markup=False)
