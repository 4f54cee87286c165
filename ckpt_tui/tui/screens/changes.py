"""The actions that change checkpoints: publish, set TTLs, delete, retries (and, through
`policy_flow.py`, keep policies).

`Changes` is a plain object the main screen owns: it asks through the dialogs, runs one bulk
action at a time through the REST client, and tells the screen what the server confirmed.
Nothing here touches a file, and a view changes only when the server has confirmed it.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from functools import partial
from typing import Protocol

from ckpt_tui.catalog import CheckpointRow, stored_only
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.client import Outcome
from ckpt_tui.tui.bulk_action import EXPIRE_INSTEAD_TEXT, BulkAction, patch_checkpoints
from ckpt_tui.tui.screens.delete_dialog import DeleteChoice, DeleteDialog
from ckpt_tui.tui.screens.host import ScreenHost
from ckpt_tui.tui.screens.publish_dialog import PublishChoice, PublishDialog
from ckpt_tui.tui.screens.session_log_view import SessionLogScreen
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog, TtlPlan
from ckpt_tui.tui.services import Services
from ckpt_tui.tui.session_log import LogEntry, LogItem
from ckpt_tui.tui.state import BrowseState

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


class Host(ScreenHost, Protocol):
    """What the actions need from the screen they act for."""

    bulk_progress: str

    @property
    def snapshot(self) -> Snapshot | None: ...

    @property
    def state(self) -> BrowseState: ...

    def show_complete(self, snapshot: Snapshot) -> None: ...

    def refresh_views(self) -> None: ...

    def run_bulk(self) -> object:
        """Start `Changes.run_bulk` in the screen's worker."""
        ...


def log_entry(action: BulkAction, summary: str, now: datetime, backend: str) -> LogEntry:
    """The session log's entry for a finished action: every checkpoint, its run and outcome."""
    items = [
        LogItem(o.target, action.run_names.get(o.target, "?"), o.ok, o.message)
        for o in action.outcomes
    ]
    if action.label not in ("", action.kind):
        summary = f"{summary} · {action.label}"  # "Set the TTL of 3 of 3 · Extend by 7 days"
    return LogEntry(now, action.kind, summary, items, backend)


def expire_instead(paths: list[str]) -> BulkAction:
    return BulkAction("expire", paths, f"expire in {EXPIRE_INSTEAD_TEXT} instead of deleting")


class Changes:
    """Publish, set TTLs and delete, one bulk action at a time, for the screen `host`."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.failures: dict[str, str] = {}
        """Checkpoints the last actions failed on, with the reason (shown in their row)."""
        self.last_action: BulkAction | None = None
        self.running: BulkAction | None = None

    @property
    def services(self) -> Services:
        return self.host.services

    # --- whether an action may start, and on what -------------------------------------------
    def targets(self) -> list[CheckpointRow]:
        """The marked checkpoints, else the highlighted one."""
        snapshot, table = self.host.snapshot, self.host.checkpoints_table
        marks = table.marks
        if snapshot is not None and marks:
            rows = snapshot.catalog.rows
            return [row for row in rows if row.tinker_path in marks]  # a stable order
        row = table.cursor_value
        return [] if row is None else [row]

    def hidden_count(self, rows: list[CheckpointRow]) -> int:
        """How many of `rows` the view does not show (a filter hides them)."""
        shown = {row.tinker_path for row in self.host.checkpoints_table.rows}
        return sum(row.tinker_path not in shown for row in rows)

    def can_change(self, verb: str) -> bool:
        """False (after telling the user why) in read-only mode or while an action runs."""
        if self.services.readonly:
            self.host.notify(
                f"Read-only mode: {verb} is off. Start ckpt-tui without --readonly to change "
                "checkpoints.",
                severity="warning",
            )
            return False
        if self.running is not None:
            self.host.notify("Another action is still running; wait for it to finish.")
            return False
        return True

    def ready_targets(self, verb: str) -> list[CheckpointRow] | None:
        """Targets an action can change now, or None after telling the user why not."""
        if not self.can_change(verb):
            return None
        rows = stored_only(self.targets())  # missing rows cannot be changed
        if not rows:
            self.host.notify("Nothing to act on: highlight or mark a stored checkpoint.")
            return None
        return rows

    # --- the actions: each asks first, in its dialog ------------------------------------------
    # Dialogs are pushed from the key's own action, not from a worker: keys typed right after
    # it (one burst over SSH) then go to the dialog, never to the screen behind it.
    def publish(self) -> None:
        """`p` asks first, listing what becomes public or private; Cancel is focused."""
        rows = self.ready_targets("publishing")
        if rows is None:
            return
        dialog = PublishDialog(rows, self.services.describe_backend(), self.services.clock.now())
        self.host.app.push_screen(dialog, partial(self.publish_chosen, rows))

    def publish_chosen(self, rows: list[CheckpointRow], choice: PublishChoice | None) -> None:
        if choice is not None:
            wanted = choice == "unpublish"
            paths = [row.tinker_path for row in rows if row.public == wanted]
            self.start(BulkAction(choice, paths, choice))

    def ttl(self) -> None:
        rows = self.ready_targets("changing TTLs")
        if rows is None:
            return
        dialog = TtlDialog(rows, self.services.clock.now(), self.services.describe_backend())
        self.host.app.push_screen(dialog, self.ttl_chosen)

    def ttl_chosen(self, plan: TtlPlan | None) -> None:
        if plan is not None:
            self.start(BulkAction("ttl", list(plan.ttl_for), plan.label, dict(plan.ttl_for)))

    def delete(self) -> None:
        rows = self.ready_targets("deleting")
        if rows is None:
            return
        dialog = self.delete_dialog(rows)
        paths = [row.tinker_path for row in rows]
        self.host.app.push_screen(dialog, partial(self.delete_chosen, paths, "delete"))

    def delete_dialog(self, rows: list[CheckpointRow]) -> DeleteDialog:
        now, backend = self.services.clock.now(), self.services.describe_backend()
        return DeleteDialog(rows, self.hidden_count(rows), now, backend)

    def delete_chosen(self, paths: list[str], label: str, choice: DeleteChoice | None) -> None:
        if choice == "delete":
            self.start(BulkAction("delete", paths, label))
        elif choice == "expire":
            self.start(expire_instead(paths))

    def retry_failed(self) -> None:
        action = self.last_action
        if action is None or not action.failed:
            self.host.notify("Nothing failed in the last action.")
            return
        if self.can_change("retrying"):
            self.start(action.retry(list(action.failed)))

    def show_log(self) -> None:
        log = self.services.session_log
        self.host.app.push_screen(SessionLogScreen(log, self.services.clock.now()))

    # --- running one action -----------------------------------------------------------------
    def start(self, action: BulkAction) -> None:
        if not action.paths:
            self.host.notify("Nothing to change: they are all in that state already.")
            return
        snapshot = self.host.snapshot
        if snapshot is not None:
            rows = snapshot.catalog.row_by_path
            action.run_names.update(
                {path: rows[path].run_name for path in action.paths if path in rows}
            )
        self.running = action
        self.host.bulk_progress = action.progress_text(0)
        self.host.run_bulk()

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
            if outcome.ok:
                confirmed.add(outcome.target)
            due = time.monotonic() - last_patch > PATCH_EVERY
            if due and (patching is None or patching.done()):
                patching = asyncio.ensure_future(self.apply_confirmed(action, set(confirmed)))
                last_patch = time.monotonic()
            self.host.bulk_progress = action.progress_text(done)

        try:
            await action.run(await self.services.get_client(), on_progress)
        finally:
            self.running = None
            self.host.bulk_progress = ""
        if patching is not None:
            await patching
        await self.apply_confirmed(action, confirmed)
        self.finish(action)

    async def apply_confirmed(self, action: BulkAction, confirmed: set[str]) -> None:
        """Show what the server confirmed so far (deleted rows go, changed rows change).

        The re-join runs in a thread: at 100,000 rows it takes a few hundred milliseconds.
        If a refresh replaced the view meanwhile, the patch is made again on the new one.
        """
        host = self.host
        if action.kind == "delete":
            host.row_cache.deleted_here.update(confirmed)  # gone, not "missing": see RowCache
        while (snapshot := host.snapshot) is not None and confirmed:
            now = self.services.clock.now()
            new = await asyncio.to_thread(self.patched, snapshot, action, confirmed, now)
            if host.snapshot is snapshot:
                host.show_complete(new)
                return

    def patched(
        self, snapshot: Snapshot, action: BulkAction, confirmed: set[str], now: datetime
    ) -> Snapshot:
        """`snapshot` as the server now holds it, given the paths it confirmed."""
        checkpoints = patch_checkpoints(snapshot.checkpoints, action, confirmed, now)
        return Snapshot.join(
            snapshot.runs,
            checkpoints,
            snapshot.discovery,
            snapshot.weights_info,
            self.host.row_cache,
        )

    def finish(self, action: BulkAction) -> None:
        """Report the outcome, keep failures marked with their errors, and log it."""
        host, services = self.host, self.services
        failed = action.failed
        for path in action.paths:
            self.failures.pop(path, None)
        self.failures.update(failed)
        self.last_action = action
        host.checkpoints_table.set_marks(failed)
        summary = action.summary()
        hint = ". Failed ones stay marked; R retries them, L shows the log." if failed else ""
        host.notify(
            summary + hint,
            title=action.label.capitalize(),
            severity="warning" if failed else "information",
            markup=False,
        )
        entry = log_entry(action, summary, services.clock.now(), services.describe_backend())
        problem = services.session_log.add(entry)
        if problem is not None:
            host.notify(f"Session log file: {problem}", severity="warning", markup=False)
        host.refresh_views()
