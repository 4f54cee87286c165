"""The screen the app opens on: runs, checkpoints and details in three switchable views, and
(unless read-only) the actions that change checkpoints, which `Changes` carries out.

The header and status lines are bound to the screen's reactive variables; the panes follow
the user's choices (`state`): assigning a new `BrowseState` refreshes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.reactive import var
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input, Static

from ckpt_tui.actions.fleet_action import FleetAction
from ckpt_tui.backends import Fleet
from ckpt_tui.backends.fleet import KEY_REFUSED
from ckpt_tui.backends.fleet_view import FleetCatalog, row_key, run_key
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.catalog.query import VIEWS, Sort
from ckpt_tui.training.logdirs import Metrics
from ckpt_tui.tui.commands import (
    ACTION_COMMANDS,
    BROWSE_COMMANDS,
    actions_early,
    bindings,
    change_keys,
)
from ckpt_tui.tui.screens.browse.changes import CHANGING_ACTIONS, Changes, outcome_notice
from ckpt_tui.tui.screens.browse.details import DetailsPane
from ckpt_tui.tui.screens.browse.downloads import Downloads
from ckpt_tui.tui.screens.browse.feed_screen import FeedScreen
from ckpt_tui.tui.screens.browse.messages import ActionDone, DownloadDone, ProgressChanged
from ckpt_tui.tui.screens.browse.panes import (
    CHECKPOINT_SORT_COLUMNS,
    RUN_SORT_COLUMNS,
    clicked_run_sort,
    clicked_sort,
    show_groups,
    show_panes,
)
from ckpt_tui.tui.screens.browse.policy_flow import (
    NOTHING_TO_CHANGE,
    planned_change,
    policy_dialog,
    selection_of,
    why_not_now,
)
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.screens.browse.status_lines import HeaderLine, StatusLine
from ckpt_tui.tui.view import render
from ckpt_tui.tui.view.garbage import settle_garbage
from ckpt_tui.tui.view.groups import BackendGroup, RunsEntry, entry_cells
from ckpt_tui.tui.view.state import BrowseState, RunSort, SortedRows, next_metric
from ckpt_tui.tui.view.status import StatusFacts, failed_text, marked_text
from ckpt_tui.tui.widgets import Cell, FastTable
from ckpt_tui.tui.widgets.filter_box import FilterBox
from ckpt_tui.tui.widgets.fitting_footer import FittingFooter

SHORT = 30
"""Fewer lines than this: the runs and details panes get shorter."""
TINY = 22
"""Fewer lines than this: the details pane is hidden, so the checkpoints keep their rows."""
MIN_WIDTH, MIN_HEIGHT = 60, 16
"""Below this the screen says it is too small instead of showing cut panes."""
WIDE = 120
"""Narrower terminals get the compact footer (less space between hints)."""
BROWSE_BINDINGS: list[BindingType] = [
    *bindings(BROWSE_COMMANDS),
    # esc stops a running action (after asking), else clears the filter
    Binding("escape", "escape", "Clear filter", show=False),
]


def load_group(backend: str) -> str:
    """The worker group of a backend's loads (one at a time: a new one cancels the last)."""
    return f"load {backend}"


class BrowseScreen(FeedScreen, inherit_bindings=False):
    """Browse runs and checkpoints, and (unless read-only) publish, set TTLs and delete."""

    # Not inherited: inherited bindings would come first in the footer, before the actions.
    BINDINGS: ClassVar[list[BindingType]] = [
        *actions_early(BROWSE_BINDINGS, bindings(ACTION_COMMANDS)),
        *Screen.BINDINGS,
        # Reached only when check_action turns the change itself off (read-only mode).
        *(
            Binding(key, f"say_readonly({verb!r})", show=False)
            for action, verb in CHANGING_ACTIONS.items()
            for key in change_keys([action])
        ),
    ]

    bulk_progress = var("")
    """'Deleting 12 of 40 · 48/s · 1s left · esc stops' while a change or a download runs."""
    download_files = var("")
    """While a download runs, a line per file in flight: its bytes, rate and time left."""
    marked = var("")
    """'3 marked · 12.0 GiB': the marks' summary, kept with the marks and the snapshot."""
    view_counts = var("")
    """'12 of 47 match', '3 expiring · 4.2 GiB': computed with the rows, shown in the status."""
    status: var[StatusFacts] = var(StatusFacts)

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.metric_key: str | None = None
        self.sorted_rows = SortedRows()
        self.last_filled: tuple[FleetCatalog | None, BrowseState] | None = None
        """The catalog and choices the panes were last filled for."""
        self.folded: frozenset[str] = frozenset()
        """Backends whose runs the runs pane hides under their row."""
        self.changes = Changes(self)
        self.downloads = Downloads(self, self.changes)

    @property
    def catalog(self) -> FleetCatalog | None:
        return self.shown_catalog

    def compute_status(self) -> StatusFacts:
        """The status line's facts; Textual recomputes them whenever one of the vars changes."""
        fleet = self.fleet
        snapshots = fleet.snapshots()
        no_logs = any(s.catalog.runs for s in snapshots) and not any(
            s.discovery.log_dirs for s in snapshots
        )
        partial = [
            state.name
            for state in fleet.states
            if state.snapshot is not None
            and state.snapshot.incomplete
            and state.name not in self.fetching
        ]
        incomplete = (", ".join(partial) if self.several else "the list") if partial else ""
        errors = tuple(
            (name if self.several else "", error) for name, error in fleet.errors().items()
        )
        refused = tuple(
            state.name if self.several else ""
            for state in fleet.states
            if state.error is not None and state.error_kind == KEY_REFUSED
        )
        problems = self.incomplete_problems()
        return StatusFacts(
            browsing=self.state.describe(),
            view_counts=self.view_counts,
            fetching=bool(self.fetching),
            refreshing=self.refreshing,
            progress=self.progress,
            bulk_progress=self.bulk_progress,
            marked=self.marked,
            no_log_dirs=self.services.log_settings.nothing_found() if no_logs else "",
            dropped_marks="" if self.dropped_marks is None else self.dropped_marks[0],
            new_above=len(self.new_above),
            incomplete=incomplete,
            first_problem=problems[0] if problems and incomplete else "",
            errors=errors,
            refused=refused,
        )

    def incomplete_problems(self) -> list[str]:
        """Why the lists shown are not whole: what each incomplete backend could not read
        (or, if it named nothing, why its list is incomplete), 'box1: ' before each when
        several are open. The status line shows the first, `?` every one."""
        found = []
        for state in self.fleet.states:
            snapshot = state.snapshot
            if snapshot is not None and snapshot.incomplete:
                named = f"{state.name}: " if self.several else ""
                found += [
                    named + line for line in snapshot.backend_problems or [snapshot.incomplete]
                ]
        return found

    # --- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield HeaderLine(self.services, id="header-line").data_bind(
            fleet=BrowseScreen.fleet, fetching=BrowseScreen.fetching
        )
        yield Static(id="too-small")
        with Vertical(id="body"):
            yield FastTable[RunsEntry](
                render.RUN_COLUMNS,
                lambda entry: self.run_cells(entry),
                run_key,  # C-level: set_rows finds the cursor's key in O(n)
                id="runs",
            )
            with Vertical(id="lower"):
                yield FastTable[CheckpointRow](
                    render.checkpoint_columns(None, False),
                    lambda row: self.checkpoint_cells(row),
                    row_key,  # C-level: ~2 ms less per 100,000-row set_rows
                    row_style=lambda row: "dim" if row.is_missing else None,
                    id="checkpoints",
                )
                yield DetailsPane(id="details")
        yield FilterBox(
            self.leave_filter,
            id="filter",
            placeholder="filter by name, path or metadata; enter keeps it, esc clears",
        )
        yield Static(id="download-files")
        yield StatusLine(id="status-line").data_bind(facts=BrowseScreen.status)
        yield FittingFooter()

    def on_mount(self) -> None:
        self.fleet = Fleet.loading(self.services.backends)
        self.query_one("#filter", Input).display = False
        self.set_focus(self.checkpoints_table)
        # After the first frame: a local store opens on its first request, and opening it
        # beside the first paint delayed it (benchmarks/bench_start.py).
        self.call_after_refresh(self.load)
        interval = self.services.poll_interval
        if interval > 0:
            self.set_interval(interval, self.poll_server)
        self.set_interval(self.services.log_check_interval, self.watch_log_dirs)

    def on_resize(self) -> None:
        width, height = self.size
        self.set_class(self.several, "-fleet")
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
    def run_cells(self, entry: RunsEntry) -> list[Cell]:
        keys = [column.key for column in self.runs_table.columns]
        states = {state.name: state for state in self.fleet.states}
        return entry_cells(entry, self.services.clock.now(), keys, states)

    def checkpoint_cells(self, row: CheckpointRow) -> list[Cell]:
        keys = [column.key for column in self.checkpoints_table.columns]
        now = self.services.clock.now()
        cells = render.checkpoint_cells(row, self.metric_key, now, keys)
        failure = self.changes.failures.get(row_key(row))
        if failure is not None and "flags" in keys:
            cells[keys.index("flags")] = Cell(f"✗ {failure}", "error")  # the last action's
        return cells

    # --- loading (the feed does the work; workers must belong to the screen) ----------------
    def load(self) -> None:
        """Load every backend side by side, one worker each (`r` retries failed ones too)."""
        for name in self.fleet.names:
            self.load_backend(name)

    def load_backend(self, name: str) -> None:
        """Fetch one backend; the screen fills in as pages arrive, never blocking."""
        self.run_worker(
            self.feed.load(name), group=load_group(name), exclusive=True, description=f"load {name}"
        )

    @work(exclusive=True, group="warm", thread=True, description="sort and index the rows")
    def warm_up(self) -> None:
        """Build the current snapshot's search texts and sort orders now, off the UI thread.

        Otherwise the first character typed into the filter builds 100,000 search texts
        (~150 ms), and each new sort key sorts 100,000 rows inside a key press.
        """
        catalog = self.catalog
        if catalog is not None:
            self.sorted_rows.warm(catalog, self.state)
            settle_garbage()  # the full collection now, not in the middle of a key press

    def poll_server(self) -> None:
        """Reload each backend whose last load has ended: not loading, and not measuring its
        latency after its list came in either (a new load would cancel that worker)."""
        running = {worker.group for worker in self.workers if worker.is_running}
        for name in self.fleet.names:
            if name not in self.fetching and load_group(name) not in running:
                self.load_backend(name)

    @work(exclusive=True, group="logs", thread=True)
    def watch_log_dirs(self) -> None:
        """Re-read training logs that grew, and the tail of every metrics.jsonl shown so far."""
        self.feed.watch_log_dirs()

    @work(group="metrics", thread=True, description="read metrics.jsonl")
    def read_metrics(self, folder: Path) -> None:
        """metrics.jsonl can be large: read it off the UI thread, once per log dir."""
        self.feed.read_metrics(folder)

    def watch_fleet(self) -> None:
        if self.is_showing:  # a load may set the fleet as the screen goes
            self.show_marked()

    # --- showing -----------------------------------------------------------------------------
    def watch_state(self) -> None:
        if self.is_showing:
            self.refresh_views()

    def refresh_views(self) -> None:
        """Recompute what every pane shows from the snapshot and the browse state."""
        catalog, state = self.catalog, self.state
        now = self.services.clock.now()
        runs, checkpoints = self.runs_table, self.checkpoints_table
        priced = any(backend.rate is not None for backend in self.fleet.states)
        same_look = self.only_the_filter_changed(catalog, state)
        self.last_filled = (catalog, state)
        shown = show_panes(
            runs,
            checkpoints,
            catalog,
            state,
            now,
            self.sorted_rows,
            self.size.width,
            priced,
            same_look=same_look,
        )
        if self.several and runs.display:  # each backend's row, loaded or not
            show_groups(
                runs, self.fleet, catalog, state, self.sorted_rows, self.folded, self.fetching
            )
        checkpoints.empty_message = self.empty_checkpoints_message()
        runs.empty_message = self.nothing_found() or runs.empty_message
        if catalog is not None:
            self.metric_key, self.view_counts = shown
        self.update_details()

    def only_the_filter_changed(self, catalog: FleetCatalog | None, state: BrowseState) -> bool:
        """Since the panes were last filled, only the filter's text changed (a key typed into
        it): every row looks as it did. Anything else (a new catalog, an action's failure, a
        resize, another sort or metric) draws the rows again."""
        if self.last_filled is None:
            return False
        last_catalog, last_state = self.last_filled
        text = state.filter_text
        return (
            last_catalog is catalog
            and last_state.filter_text != text
            and replace(last_state, filter_text=text) == state
        )

    def update_details(self) -> None:
        if not self.is_showing:  # a metrics read (a thread) may end as the screen goes
            return
        row = self.checkpoints_table.cursor_value
        catalog = self.catalog
        run = catalog.run((row.backend, row.run_id)) if (catalog and row) else None
        metrics = self.cached_metrics(run)
        pane = self.query_one(DetailsPane)
        pane.show(row, run, self.services.clock.now(), metrics)
        if run is not None and run.log_dir is not None and metrics is None:
            self.read_metrics(run.log_dir.path)

    def cached_metrics(self, run: RunSummary | None) -> Metrics | None:
        if run is None or run.log_dir is None:
            return None
        return self.services.metrics_cache.get(str(run.log_dir.path))

    def show_marked(self) -> None:
        marks = self.checkpoints_table.marks
        self.marked = marked_text(self.catalog, marks, self.fleet)

    def empty_checkpoints_message(self) -> str:
        """On a failed backend's row: its error and what to do; else the usual words."""
        key = self.state.run_key
        if self.state.view == "runs" and self.on_backend_row(key) and key is not None:
            state = self.fleet.state(key[0])
            if state.error is not None:
                return failed_text(key[0], state.error, state.error_kind)
            if state.snapshot is None:
                return f"{key[0]}: loading…"
        if self.catalog is None:
            return self.checkpoints_table.empty_message  # loading, or why none could load
        return self.nothing_found() or "No checkpoints here."

    def nothing_found(self) -> str | None:
        """What one backend that holds nothing says (where it looked); None otherwise."""
        catalog = self.catalog
        if self.several or catalog is None or catalog.runs or self.first_loads():
            return None
        client = self.services.client(self.fleet.names[0])
        return client.endpoint.nothing_found()

    # --- the changes ---------------------------------------------------------------------------
    @on(ActionDone)
    def change_done(self, message: ActionDone) -> None:
        """Report a finished change; its failures stay marked, with their errors in their rows
        (it is logged already)."""
        action = message.action
        self.changes.finished(action)
        showing = self.is_showing
        if showing:
            self.checkpoints_table.set_marks(action.failed)
        self.notify(
            outcome_notice(action),
            title=action.label.capitalize(),
            severity="warning" if action.failed else "information",
            markup=False,
        )
        for problem in message.log_problems:
            self.notify(f"Session log file: {problem}", severity="warning", markup=False)
        if showing:
            self.refresh_views()

    @on(ProgressChanged)
    def progress_changed(self, message: ProgressChanged) -> None:
        """A change's or a download's progress (and a download's files in flight)."""
        self.bulk_progress, self.download_files = message.line, message.files

    @on(DownloadDone)
    def download_done(self, message: DownloadDone) -> None:
        """Say how a download went; what was not downloaded stays (or becomes) marked."""
        if self.is_showing:
            self.checkpoints_table.set_marks(message.unfinished)
        self.notify(
            message.summary,
            title="Download",
            severity="warning" if message.undone else "information",
            markup=False,
        )

    # --- events ------------------------------------------------------------------------------
    @on(FastTable.Highlighted, "#runs")
    def run_highlighted(self, event: FastTable.Highlighted) -> None:
        entry = event.row
        if isinstance(entry, (RunSummary, BackendGroup)) and run_key(entry) != self.state.run_key:
            # a backend's row: all its checkpoints below
            self.state = replace(self.state, run_key=run_key(entry))

    @on(FastTable.Selected, "#runs")
    def run_selected(self, event: FastTable.Selected) -> None:
        """Enter on a backend's row folds or unfolds its runs."""
        if isinstance(event.row, BackendGroup):
            self.toggle_fold(event.row.backend)

    def action_toggle_fold(self) -> None:
        """`f` in the runs pane: fold or unfold the highlighted backend's runs."""
        entry = self.runs_table.cursor_value
        if self.several and entry is not None:
            self.toggle_fold(entry.backend)

    def toggle_fold(self, backend: str) -> None:
        self.folded = self.folded ^ {backend}
        self.refresh_views()
        self.runs_table.move_cursor_to_key((backend, ""))

    @on(FastTable.Highlighted, "#checkpoints")
    def checkpoint_highlighted(self) -> None:
        if self.new_above and self.checkpoints_table.cursor_row == 0:
            self.new_above = frozenset()  # the user went up to see them
        self.update_details()

    @on(FastTable.MarksChanged, "#checkpoints")
    def marks_changed(self, event: FastTable.MarksChanged) -> None:
        if self.dropped_marks is not None and event.marks != self.dropped_marks[1]:
            self.dropped_marks = None  # said once: the user has changed the marks since
        self.show_marked()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        # The box's value now, not the event's: after escape in a burst ("/x<esc>"), the
        # change to "x" is still queued behind the clearing and must not bring "x" back.
        self.state = replace(self.state, filter_text=event.input.value)
        # The Input has already asked the screen for a frame (its echo), and the screen's
        # 60 fps timer paints it before the tables' own repaint requests arrive; theirs then
        # wait for the next tick, which Textual's timer places 17-33 ms later (measured: the
        # table's frame at ~40 ms at only 1k rows). Marking their regions dirty on the screen
        # now puts the filtered rows in the same frame as the echo.
        self.refresh(*(widget.region for widget in self.filter_painted_widgets()))

    def filter_painted_widgets(self) -> list[Widget]:
        """What a filter change repaints besides the Input itself."""
        widgets: list[Widget] = [self.checkpoints_table, self.query_one(DetailsPane)]
        widgets += [self.runs_table, self.query_one(StatusLine)]
        return [widget for widget in widgets if widget.display]

    def leave_filter(self, keep: bool) -> None:
        """Enter (keep the filter) or escape (clear it) in the filter box: back to the table."""
        if keep:
            self.query_one("#filter", Input).display = False
            self.set_focus(self.checkpoints_table)
        else:
            self.action_clear_filter()

    @on(FastTable.HeaderClicked, "#runs")
    def run_header_clicked(self, event: FastTable.HeaderClicked) -> None:
        """A click on Run, Size or Next expiry sorts by it; a second click reverses."""
        key = RUN_SORT_COLUMNS.get(event.column_key)
        if key is not None:
            self.show_new_order(clicked_run_sort(self.state, key), self.runs_table)

    @on(FastTable.HeaderClicked, "#checkpoints")
    def checkpoint_header_clicked(self, event: FastTable.HeaderClicked) -> None:
        """A click on a sortable column sorts by it; a second click reverses."""
        key = CHECKPOINT_SORT_COLUMNS.get(event.column_key)
        if key is not None and self.state.view != "expiring":
            self.show_new_order(clicked_sort(self.state, key), self.checkpoints_table)

    # --- browsing keys -----------------------------------------------------------------------
    async def action_quit(self) -> None:
        await self.app.action_quit()

    def action_help(self) -> None:
        from ckpt_tui.tui.screens.help_dialog import HelpDialog

        self.app.push_screen(HelpDialog(self.incomplete_problems()))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the filter box has focus, "/" is a character to type, not the filter key; in
        read-only mode the changes leave the footer, and their keys only say why."""
        readonly = self.services.readonly
        if action in CHANGING_ACTIONS and readonly:
            return False
        if action == "say_readonly":
            return readonly
        return not (action == "filter" and isinstance(self.focused, Input))

    async def on_key(self, event: events.Key) -> None:
        """A key read while a table had focus, but handled after the priority "/" moved the
        focus into the filter box ("2/" in one burst over tmux or SSH): do what it does on the
        table. The box types its own printable keys and stops them, so a printable key that
        reaches the screen while the box has focus was read before the "/"."""
        if not (event.is_printable and isinstance(self.focused, FilterBox)):
            return
        # The screen's own bindings: with the box focused, Textual leaves printable keys to it.
        binding = next(
            (b for b in self.BINDINGS if isinstance(b, Binding) and event.key in b.key.split(",")),
            None,
        )
        if binding is None:
            return
        event.stop()
        event.prevent_default()
        await self.run_action(binding.action)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        self.set_focus(box)  # now, not later: keys typed right after "/" must land in it

    def action_escape(self) -> None:
        """esc: asks to stop the running action or download, else clears the filter."""
        if not self.ask_stop():
            self.action_clear_filter()

    def ask_stop(self) -> bool:
        """Ask to stop what runs (a change or a download); False when nothing runs."""
        if self.changes.running is not None:
            self.changes.ask_stop()
        elif self.downloads.running is not None:
            self.downloads.ask_stop()
        else:
            return False
        return True

    def running_text(self) -> str | None:
        """What runs now, as its progress says it without the stop hint ("Deleting 12 of
        40 · …"), or None."""
        if self.changes.running is not None:
            return self.changes.progress or self.changes.running.label or "an action"
        if self.downloads.running is not None:
            return self.downloads.line or "a download"
        return None

    def other_work(self) -> str | None:
        """For `Changes`: a download runs (changes wait for it)."""
        return None if self.downloads.running is None else self.bulk_progress

    def watch_download_files(self, lines: str) -> None:
        if self.is_showing:
            files = self.query_one("#download-files", Static)
            files.update(Text(lines))
            files.display = bool(lines)

    def action_download(self) -> None:
        self.downloads.ask()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.display and not self.state.filter_text:
            return
        box.value = ""
        box.display = False
        self.set_focus(self.checkpoints_table)
        self.state = replace(self.state, filter_text="")

    def action_cycle_sort(self) -> None:
        self.change_sort(RunSort.cycled, Sort.cycled)

    def action_reverse_sort(self) -> None:
        self.change_sort(RunSort.flipped, Sort.flipped)

    def change_sort(
        self, runs: Callable[[RunSort], RunSort], checkpoints: Callable[[Sort], Sort]
    ) -> None:
        """`s` and `S` sort the runs pane while it has focus, else the checkpoints."""
        state, runs_table = self.state, self.runs_table
        if state.view == "runs" and self.focused is runs_table:
            self.show_new_order(replace(state, run_sort=runs(state.run_sort)), runs_table)
        else:
            new = replace(state, sort=checkpoints(state.sort))
            self.show_new_order(new, self.checkpoints_table)

    def show_new_order(self, state: BrowseState, table: FastTable[Any]) -> None:
        """A new order shows its first rows (the biggest, after `S` on size; the first run and
        its checkpoints), not the old cursor row somewhere in the middle."""
        self.state = state
        table.move_cursor(0)

    def action_cycle_view(self) -> None:
        self.show_view(self.state.cycled_view())

    def action_view(self, name: str) -> None:
        if name in VIEWS:
            self.show_view(replace(self.state, view=name))

    def show_view(self, state: BrowseState) -> None:
        self.state = state
        if not isinstance(self.focused, FilterBox):  # "2/" in one burst: "/" came first
            self.set_focus(self.checkpoints_table)

    def action_cycle_window(self) -> None:
        self.state = self.state.cycled_window()

    def action_cycle_metric(self) -> None:
        if self.catalog is not None:
            self.state = replace(self.state, metric=next_metric(self.catalog, self.state))

    def action_refresh(self) -> None:
        self.load()

    def action_copy_path(self) -> None:
        row = self.checkpoints_table.cursor_value
        if row is None:
            self.notify("No checkpoint highlighted.", severity="warning")
            return
        self.app.copy_to_clipboard(row.tinker_path)
        self.notify(f"Copied {row.tinker_path}", markup=False)

    # --- marking -------------------------------------------------------------------------------
    def action_toggle_mark(self) -> None:
        """Mark or unmark, then move down (as in most file managers): space space marks two."""
        self.checkpoints_table.action_mark_and_down()

    def action_mark_all(self) -> None:
        """Mark every stored checkpoint the view shows now (after the filter)."""
        table = self.checkpoints_table
        shown = [row_key(row) for row in table.rows if not row.is_missing]
        table.set_marks(table.marks | set(shown))

    def action_clear_marks(self) -> None:
        self.checkpoints_table.clear_marks()

    def action_say_readonly(self, verb: str) -> None:
        self.changes.can_change(verb)

    def action_publish(self) -> None:
        self.changes.publish()

    def action_ttl(self) -> None:
        self.changes.ttl()

    def action_delete(self) -> None:
        self.changes.delete()

    @work(group="ask")
    async def action_keep_policy(self) -> None:
        """`K`: the keep policy's dialog over the runs pointed at, then its TTLs, or its
        deletions once the delete dialog confirms them (`policy_flow.py`)."""
        changes, catalog = self.changes, self.catalog
        if not changes.can_change("applying a keep policy"):
            return
        why_not = why_not_now(catalog, self.fleet)
        if why_not is not None:
            self.notify(why_not[0], severity=why_not[1], markup=False)
            return
        assert catalog is not None  # why_not_now says so
        table = self.checkpoints_table
        selection = selection_of(self.state, table.marks, table.cursor_value)
        dialog = policy_dialog(selection, catalog, self.fleet, self.services)
        outcome = await self.app.push_screen_wait(dialog)
        if outcome is None:
            return
        change = planned_change(outcome, self.services.connections)
        if change is None:
            self.notify(NOTHING_TO_CHANGE, severity="warning")
        elif isinstance(change, FleetAction):
            changes.start(change)
        else:
            choice = await self.app.push_screen_wait(changes.delete_dialog(change))
            changes.delete_chosen(change.rows, "delete (keep policy)", choice)

    def action_retry_failed(self) -> None:
        self.changes.retry_failed()

    def action_session_log(self) -> None:
        self.changes.show_log()
