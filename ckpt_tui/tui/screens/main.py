"""The screen the app opens on: browsing plus the actions that change checkpoints.

Every change goes through the REST client; nothing here touches a file. A view changes only
when the server has confirmed it.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from functools import partial
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.screen import Screen

from ckpt_tui.catalog import CheckpointRow, stored_only
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.client import Outcome
from ckpt_tui.tui.bulk_action import EXPIRE_INSTEAD_TEXT, BulkAction, patch_checkpoints
from ckpt_tui.tui.commands import ACTION_COMMANDS, bindings, change_keys
from ckpt_tui.tui.policy_flow import keep_policy_flow
from ckpt_tui.tui.screens.browse import BrowseScreen
from ckpt_tui.tui.screens.delete_dialog import DeleteChoice, DeleteDialog
from ckpt_tui.tui.screens.publish_dialog import PublishChoice, PublishDialog
from ckpt_tui.tui.screens.session_log_view import SessionLogScreen
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog, TtlPlan
from ckpt_tui.tui.session_log import LogEntry, LogItem
from ckpt_tui.tui.widgets import Cell

PATCH_EVERY = 0.3
"""Seconds between view updates while a bulk action's results arrive."""
CHANGES = {
    "publish": "publishing",
    "ttl": "changing TTLs",
    "delete": "deleting",
    "keep_policy": "applying a keep policy",
    "retry_failed": "retrying",
}
"""The actions that change checkpoints (off, and out of the footer, in read-only mode), and
how the read-only notice names each."""


FOOTER_FIRST = ("quit", "help")


def actions_early(browse: list[BindingType], actions: list[Binding]) -> list[BindingType]:
    """The footer shows bindings in this order, and a narrow terminal cuts its end: quit and
    help, then the actions (p, t, d, K), then the browsing keys."""

    def first(binding: BindingType) -> bool:
        return isinstance(binding, Binding) and binding.action in FOOTER_FIRST

    return [
        *filter(first, browse),
        *actions,
        *(binding for binding in browse if not first(binding)),
    ]


def log_entry(action: BulkAction, summary: str, now: datetime, backend: str) -> LogEntry:
    """The session log's entry for a finished action: every checkpoint, its run and outcome."""
    items = [
        LogItem(o.target, action.run_names.get(o.target, "?"), o.ok, o.message)
        for o in action.outcomes
    ]
    if action.label not in ("", action.kind):
        summary = f"{summary} · {action.label}"  # "Set the TTL of 3 of 3 · Extend by 7 days"
    return LogEntry(now, action.kind, summary, items, backend)


class MainScreen(BrowseScreen, inherit_bindings=False):
    """Browse runs and checkpoints, and (unless read-only) publish, set TTLs and delete."""

    # Not inherited: inherited bindings would come first in the footer, before the actions.
    BINDINGS: ClassVar[list[BindingType]] = [
        *actions_early(BrowseScreen.BINDINGS, bindings(ACTION_COMMANDS)),
        *Screen.BINDINGS,
        # Reached only when check_action turns the change itself off (read-only mode).
        *(
            Binding(key, f"say_readonly({verb!r})", show=False)
            for action, verb in CHANGES.items()
            for key in change_keys([action])
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.failures: dict[str, str] = {}
        self.last_action: BulkAction | None = None
        self.running: BulkAction | None = None
        self.bulk_progress = ""

    # --- what an action applies to ----------------------------------------------------------
    def targets(self) -> list[CheckpointRow]:
        """The marked checkpoints, else the highlighted one."""
        catalog = self.catalog
        marks = self.checkpoints_table.marks
        if catalog is not None and marks:
            return [row for row in catalog.rows if row.tinker_path in marks]  # a stable order
        row = self.checkpoints_table.cursor_value
        return [] if row is None else [row]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In read-only mode the changes leave the footer; their keys only say why."""
        readonly = self.ckpt_app.readonly
        if action in CHANGES and readonly:
            return False
        if action == "say_readonly":
            return readonly
        return super().check_action(action, parameters)

    def action_say_readonly(self, verb: str) -> None:
        self.can_change(verb)

    def can_change(self, verb: str) -> bool:
        """False (after telling the user why) in read-only mode or while an action runs."""
        if self.ckpt_app.readonly:
            self.notify(
                f"Read-only mode: {verb} is off. Start ckpt-tui without --readonly to change "
                "checkpoints.",
                severity="warning",
            )
            return False
        if self.running is not None:
            self.notify("Another action is still running; wait for it to finish.")
            return False
        return True

    def ready_targets(self, verb: str) -> list[CheckpointRow] | None:
        """Targets an action can change now, or None after telling the user why not."""
        if not self.can_change(verb):
            return None
        rows = stored_only(self.targets())  # missing rows cannot be changed
        if not rows:
            self.notify("Nothing to act on: highlight or mark a stored checkpoint.")
            return None
        return rows

    def hidden_count(self, rows: list[CheckpointRow]) -> int:
        shown = {row.tinker_path for row in self.checkpoints_table.rows}
        return sum(row.tinker_path not in shown for row in rows)

    # --- the actions --------------------------------------------------------------------------
    # Dialogs are pushed from the key's own action, not from a worker: keys typed right after
    # it (one burst over SSH) then go to the dialog, never to the screen behind it.
    def action_publish(self) -> None:
        """`p` asks first, listing what becomes public or private; Cancel is focused."""
        rows = self.ready_targets("publishing")
        if rows is None:
            return
        app = self.ckpt_app
        dialog = PublishDialog(rows, app.describe_backend(), app.clock.now())
        self.app.push_screen(dialog, partial(self.publish_chosen, rows))

    def publish_chosen(self, rows: list[CheckpointRow], choice: PublishChoice | None) -> None:
        if choice is not None:
            wanted = choice == "unpublish"
            paths = [row.tinker_path for row in rows if row.public == wanted]
            self.start(BulkAction(choice, paths, choice))

    def action_ttl(self) -> None:
        rows = self.ready_targets("changing TTLs")
        if rows is None:
            return
        app = self.ckpt_app
        self.app.push_screen(
            TtlDialog(rows, app.clock.now(), app.describe_backend()), self.ttl_chosen
        )

    def ttl_chosen(self, plan: TtlPlan | None) -> None:
        if plan is not None:
            self.start(BulkAction("ttl", list(plan.ttl_for), plan.label, dict(plan.ttl_for)))

    def action_delete(self) -> None:
        rows = self.ready_targets("deleting")
        if rows is None:
            return
        now = self.ckpt_app.clock.now()
        dialog = DeleteDialog(rows, self.hidden_count(rows), now, self.ckpt_app.describe_backend())
        paths = [row.tinker_path for row in rows]
        self.app.push_screen(dialog, partial(self.delete_chosen, paths))

    def delete_chosen(self, paths: list[str], choice: DeleteChoice | None) -> None:
        if choice == "delete":
            self.start(BulkAction("delete", paths, "delete"))
        elif choice == "expire":
            self.start(
                BulkAction("expire", paths, f"expire in {EXPIRE_INSTEAD_TEXT} instead of deleting")
            )

    @work(group="ask")
    async def action_keep_policy(self) -> None:
        """`k`: plan deletions by a keep policy over the marked runs, this run, or all runs."""
        await keep_policy_flow(self)

    def action_retry_failed(self) -> None:
        action = self.last_action
        if action is None or not action.failed:
            self.notify("Nothing failed in the last action.")
            return
        if self.can_change("retrying"):
            self.start(action.retry(list(action.failed)))

    def action_toggle_mark(self) -> None:
        """Mark or unmark, then move down (as in most file managers): space space marks two."""
        self.checkpoints_table.action_mark_and_down()

    def action_mark_all(self) -> None:
        """Mark every stored checkpoint the view shows now (after the filter)."""
        table = self.checkpoints_table
        shown = [row.tinker_path for row in table.rows if not row.is_missing]
        table.set_marks(table.marks | set(shown))

    def action_clear_marks(self) -> None:
        self.checkpoints_table.clear_marks()

    def action_session_log(self) -> None:
        log = self.ckpt_app.session_log
        self.app.push_screen(SessionLogScreen(log, self.ckpt_app.clock.now()))

    # --- running one action -----------------------------------------------------------------
    def start(self, action: BulkAction) -> None:
        if not action.paths:
            self.notify("Nothing to change: they are all in that state already.")
            return
        catalog = self.catalog
        if catalog is not None:
            rows = catalog.row_by_path
            action.run_names.update(
                {path: rows[path].run_name for path in action.paths if path in rows}
            )
        self.running = action
        self.bulk_progress = action.progress_text(0)
        self.update_chrome()
        self.run_bulk()

    # No arguments, as for every worker here (see BrowseScreen.warm_up): it reads self.running.
    @work(group="bulk", description="apply an action")
    async def run_bulk(self) -> None:
        """Apply the running action while the user keeps browsing; the view follows results."""
        action = self.running
        if action is None:
            return
        confirmed: set[str] = set()
        last_patch = time.monotonic()
        patching: asyncio.Future[None] | None = None

        def on_progress(done: int, total: int, outcome: Outcome) -> None:
            nonlocal last_patch, patching
            self.bulk_progress = action.progress_text(done)
            if outcome.ok:
                confirmed.add(outcome.target)
            due = time.monotonic() - last_patch > PATCH_EVERY
            if due and (patching is None or patching.done()):
                patching = asyncio.ensure_future(self.apply_confirmed(action, set(confirmed)))
                last_patch = time.monotonic()
            self.update_chrome()

        try:
            await action.run(await self.ckpt_app.get_client(), on_progress)
        finally:
            self.running = None
            self.bulk_progress = ""
        if patching is not None:
            await patching
        await self.apply_confirmed(action, confirmed)
        self.finish(action)

    async def apply_confirmed(self, action: BulkAction, confirmed: set[str]) -> None:
        """Show what the server confirmed so far (deleted rows go, changed rows change).

        The re-join runs in a thread: at 100,000 rows it takes a few hundred milliseconds.
        If a refresh replaced the view meanwhile, the patch is made again on the new one.
        """
        if action.kind == "delete":
            self.row_cache.deleted_here.update(confirmed)  # gone, not "missing": see RowCache
        while (snapshot := self.snapshot) is not None and confirmed:
            now = self.ckpt_app.clock.now()
            new = await asyncio.to_thread(self.patched, snapshot, action, confirmed, now)
            if self.snapshot is snapshot:
                self.show_complete(new)
                return

    def patched(
        self, snapshot: Snapshot, action: BulkAction, confirmed: set[str], now: datetime
    ) -> Snapshot:
        """`snapshot` as the server now holds it, given the paths it confirmed."""
        checkpoints = patch_checkpoints(snapshot.checkpoints, action, confirmed, now)
        return Snapshot.join(
            snapshot.runs, checkpoints, snapshot.discovery, snapshot.weights_info, self.row_cache
        )

    def finish(self, action: BulkAction) -> None:
        """Report the outcome, keep failures marked with their errors, and log it."""
        backend = self.ckpt_app.describe_backend()
        failed = action.failed
        for path in action.paths:
            self.failures.pop(path, None)
        self.failures.update(failed)
        self.last_action = action
        self.checkpoints_table.set_marks(failed)
        summary = action.summary()
        hint = ". Failed ones stay marked; R retries them, L shows the log." if failed else ""
        self.notify(
            summary + hint,
            title=action.label.capitalize(),
            severity="warning" if failed else "information",
            markup=False,
        )
        entry = log_entry(action, summary, self.ckpt_app.clock.now(), backend)
        problem = self.ckpt_app.session_log.add(entry)
        if problem is not None:
            self.notify(f"Session log file: {problem}", severity="warning", markup=False)
        self.refresh_views()

    # --- showing failures inline --------------------------------------------------------------
    def checkpoint_cells(self, row: CheckpointRow) -> list[Cell]:
        cells = super().checkpoint_cells(row)
        failure = self.failures.get(row.tinker_path)
        if failure is None:
            return cells
        keys = [column.key for column in self.checkpoints_table.columns]
        if "flags" in keys:
            cells[keys.index("flags")] = Cell(f"✗ {failure}", "error")
        return cells
