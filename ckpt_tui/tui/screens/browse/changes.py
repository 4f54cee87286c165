"""The actions that change checkpoints: publish, set TTLs, delete, retries (and, through
`policy_flow.py`, keep policies).

`Changes` is a plain object the browse screen owns: it asks through the dialogs, runs one action
at a time, each backend's part through that backend's own client and side by side, and tells
the screen what each server confirmed, as messages (`messages.py`). Nothing here touches a
file, and a view changes only when the server has confirmed it. A read-only backend's part is
left out, and the dialog says so before anything goes.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Protocol

from ckpt_tui.actions.bulk_action import EXPIRE_INSTEAD_TEXT, BulkAction, patch_checkpoints
from ckpt_tui.actions.fleet_action import FleetAction
from ckpt_tui.actions.owners import Targets, refusal
from ckpt_tui.actions.session_log import LogEntry, LogItem
from ckpt_tui.backends import Fleet
from ckpt_tui.backends.fleet_view import FleetCatalog, RowKey, row_key
from ckpt_tui.catalog import CheckpointRow, stored_only
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.client import Outcome, Stop
from ckpt_tui.timekeeping.rate import RateMeter
from ckpt_tui.tui.screens.browse.host import ScreenHost
from ckpt_tui.tui.screens.browse.messages import ActionDone, NewerSnapshot, ProgressChanged
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.screens.delete_dialog import DeleteChoice, DeleteDialog
from ckpt_tui.tui.screens.publish_dialog import PublishChoice, PublishDialog
from ckpt_tui.tui.screens.quit_dialog import StopDialog
from ckpt_tui.tui.screens.session_log_dialog import SessionLogDialog
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog, TtlPlan
from ckpt_tui.tui.view.state import BrowseState, SortedRows, visible_rows

PATCH_EVERY = 0.3
"""Seconds between view updates while a bulk action's results arrive."""
STOP_HINT = "esc stops"
"""After a running action's progress: the key that asks to stop it."""
BULK_STOP = (
    "Stopping sends nothing more; the changes already sent finish first. Then it says which "
    "were done, failed and not tried; those not done stay marked, and R carries on."
)
CHANGING_ACTIONS = {
    "publish": "publishing",
    "ttl": "changing TTLs",
    "delete": "deleting",
    "keep_policy": "applying a keep policy",
    "retry_failed": "retrying",
}
"""The actions that change checkpoints (off, and out of the footer, in read-only mode), and
how the read-only notice names each."""


class Host(ScreenHost, Protocol):
    """What the actions read of the screen they act for: its rows, its fleet and the user's
    choices (which rows a change goes to, and which the filter hides, depend on them)."""

    sorted_rows: SortedRows

    @property
    def fleet(self) -> Fleet: ...

    @property
    def catalog(self) -> FleetCatalog | None: ...

    @property
    def state(self) -> BrowseState: ...

    def other_work(self) -> str | None:
        """What else runs that a change must wait for (a download), or None."""
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


def expire_instead(rows: list[CheckpointRow]) -> FleetAction:
    label = f"expire in {EXPIRE_INSTEAD_TEXT} instead of deleting"
    return FleetAction.of("expire", rows, label)


class Changes:
    """Publish, set TTLs and delete, one bulk action at a time, for the screen `host`."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.failures: dict[RowKey, str] = {}
        """Checkpoints the last actions failed on, with the reason (shown in their row)."""
        self.last_action: FleetAction | None = None
        self.running: FleetAction | None = None
        self.stop: Stop | None = None
        """The running action's stop: esc or ctrl+c asks, then sets it."""
        self.progress = ""
        """The running action's progress last shown, without the stop hint (the stop and
        quit dialogs show it)."""

    @property
    def services(self) -> Services:
        return self.host.services

    # --- whether an action may start, and on what -------------------------------------------
    def targets(self) -> list[CheckpointRow]:
        """The marked checkpoints, else the highlighted one."""
        catalog, table = self.host.catalog, self.host.checkpoints_table
        marks = table.marks
        if catalog is not None and marks:
            return [row for row in catalog.rows if row_key(row) in marks]  # a stable order
        row = table.cursor_value
        return [] if row is None else [row]

    def hidden_by_filter(self, rows: list[CheckpointRow]) -> int:
        """How many of `rows` the view holds but its filter hides."""
        host, catalog = self.host, self.host.catalog
        if not host.state.filter_text or catalog is None:
            return 0
        shown = set(map(row_key, host.checkpoints_table.rows))
        unfiltered = replace(host.state, filter_text="")
        now = self.services.clock.now()
        in_view = set(map(row_key, visible_rows(catalog, unfiltered, now, host.sorted_rows)))
        return sum(key in in_view and key not in shown for key in map(row_key, rows))

    def out_of_view(self, rows: list[CheckpointRow]) -> list[str]:
        """A warning for rows the checkpoints list does not hold at all (other runs or
        backends, e.g. a keep policy's), apart from those its filter hides."""
        shown = set(map(row_key, self.host.checkpoints_table.rows))
        elsewhere = sum(row_key(row) not in shown for row in rows) - self.hidden_by_filter(rows)
        if not elsewhere:
            return []
        verb = "is" if elsewhere == 1 else "are"
        return [f"⚠ {elsewhere} of these {verb} not in the checkpoints list on screen"]

    def can_change(self, verb: str) -> bool:
        """False (after telling the user why) in read-only mode or while an action runs."""
        if self.services.readonly:
            self.host.notify(
                f"Read-only mode: {verb} is off. Start ckpt-tui without --readonly to change "
                "checkpoints.",
                severity="warning",
            )
            return False
        if self.running is not None or self.host.other_work() is not None:
            self.host.notify("Another action is still running; wait for it to finish.")
            return False
        return True

    def ready_targets(self, verb: str) -> Targets | None:
        """Targets an action can change now, or None after telling the user why not.

        Rows on a read-only backend are refused and left out; the dialog says so, and the
        rest goes only if the user confirms that reduced set.
        """
        if not self.can_change(verb):
            return None
        rows = stored_only(self.targets())  # missing rows cannot be changed
        if not rows:
            self.host.notify("Nothing to act on: highlight or mark a stored checkpoint.")
            return None
        targets = Targets.split(rows, self.services.connections)
        if not targets.rows:
            self.host.notify(
                f"{refusal(targets.refused)}: {verb} is off there. Nothing else to act on.",
                severity="warning",
                markup=False,
            )
            return None
        return targets

    def where(self, targets: Targets) -> str:
        """'on box1 (http://…)', or one line per backend a change goes to, naming each."""
        return targets.where({backend.name: backend for backend in self.services.backends})

    # --- the actions: each asks first, in its dialog ------------------------------------------
    # Dialogs are pushed from the key's own action, not from a worker: keys typed right after
    # it (one burst over SSH) then go to the dialog, never to the screen behind it.
    def publish(self) -> None:
        """`p` asks first, listing what becomes public or private; Cancel is focused."""
        targets = self.ready_targets("publishing")
        if targets is None:
            return
        now, warnings = self.services.clock.now(), targets.warnings()
        dialog = PublishDialog(targets.rows, self.where(targets), now, warnings)
        self.host.app.push_screen(dialog, partial(self.publish_chosen, targets.rows))

    def publish_chosen(self, rows: list[CheckpointRow], choice: PublishChoice | None) -> None:
        if choice is not None:
            wanted = choice == "unpublish"
            chosen = [row for row in rows if row.public == wanted]
            self.start(FleetAction.of(choice, chosen, choice))

    def ttl(self) -> None:
        targets = self.ready_targets("changing TTLs")
        if targets is None:
            return
        now, warnings = self.services.clock.now(), targets.warnings()
        dialog = TtlDialog(targets.rows, now, self.where(targets), warnings)
        self.host.app.push_screen(dialog, partial(self.ttl_chosen, targets.rows))

    def ttl_chosen(self, rows: list[CheckpointRow], plan: TtlPlan | None) -> None:
        if plan is not None:
            chosen = [row for row in rows if row_key(row) in plan.ttl_for]
            self.start(FleetAction.of("ttl", chosen, plan.label, plan.ttl_for))

    def delete(self) -> None:
        targets = self.ready_targets("deleting")
        if targets is None:
            return
        dialog = self.delete_dialog(targets)
        self.host.app.push_screen(dialog, partial(self.delete_chosen, targets.rows, "delete"))

    def delete_dialog(self, targets: Targets) -> DeleteDialog:
        rows, now = targets.rows, self.services.clock.now()
        where, refusals = self.where(targets), [*targets.warnings(), *self.out_of_view(rows)]
        return DeleteDialog(rows, self.hidden_by_filter(rows), now, where, refusals)

    def delete_chosen(
        self, rows: list[CheckpointRow], label: str, choice: DeleteChoice | None
    ) -> None:
        if choice == "delete":
            self.start(FleetAction.of("delete", rows, label))
        elif choice == "expire":
            self.start(expire_instead(rows))

    def retry_failed(self) -> None:
        action = self.last_action
        if action is None or not action.failed:
            self.host.notify("Nothing failed in the last action.")
            return
        if self.can_change("retrying"):
            self.start(action.retry())

    def show_log(self) -> None:
        log = self.services.session_log
        self.host.app.push_screen(SessionLogDialog(log, self.services.clock.now()))

    # --- running one action -----------------------------------------------------------------
    def start(self, action: FleetAction) -> None:
        if not action.count:
            self.host.notify("Nothing to change: they are all in that state already.")
            return
        self.running, self.stop = action, Stop()
        self.show(action.progress_text(0))
        # The worker belongs to the screen (a worker needs a Textual node); its results come
        # back as messages.
        self.host.run_worker(self.run_bulk(), group="bulk", description="apply an action")

    def ask_stop(self) -> None:
        """esc or ctrl+c while an action runs: stop it? ("Keep running" is focused)."""
        if self.running is None or self.stop is None or self.stop.requested:
            return
        dialog = StopDialog(self.host.running_text, self.services.describe_backend(), BULK_STOP)
        self.host.app.push_screen(dialog, self.stop_chosen)

    def show(self, progress: str, stoppable: bool = True) -> None:
        """The status line says `progress` ("" when the action is over), once it changed,
        followed by how to stop it while it can still be stopped."""
        if progress != self.progress:
            self.progress = progress
            line = f"{progress} · {STOP_HINT}" if progress and stoppable else progress
            self.host.post_message(ProgressChanged(line))

    def stop_chosen(self, stop: bool | None) -> None:
        if stop and self.running is not None and self.stop is not None:
            self.stop.request()
            self.show("Stopping: waiting for the changes already sent…", stoppable=False)

    async def run_bulk(self) -> None:
        """Apply the running action while the user keeps browsing; the view follows results.

        Each backend's part goes through its own client, side by side."""
        action = self.running
        if action is None:
            return
        confirmed: dict[str, set[str]] = {}
        done = 0
        last_patch = time.monotonic()
        patching: asyncio.Future[None] | None = None
        meter, stop = RateMeter(action.count), self.stop

        def on_progress(backend: str, outcome: Outcome) -> None:
            nonlocal done, last_patch, patching
            done += 1
            if outcome.ok:
                confirmed.setdefault(backend, set()).add(outcome.target)
            due = time.monotonic() - last_patch > PATCH_EVERY
            if due and (patching is None or patching.done()):
                so_far = {name: set(paths) for name, paths in confirmed.items()}
                patching = asyncio.ensure_future(self.apply_confirmed(action, so_far))
                last_patch = time.monotonic()
            meter.update(done)
            if stop is None or not stop.requested:
                self.show(action.progress_text(done, meter))

        try:
            await action.run(self.services.client, on_progress, stop)
        finally:
            self.running = self.stop = None
            self.show("")
        if patching is not None:
            await patching
        await self.apply_confirmed(action, confirmed)
        # Logged here, not by the screen: a screen that has gone takes no message.
        self.host.post_message(ActionDone(action, self.log(action)))

    async def apply_confirmed(self, action: FleetAction, confirmed: dict[str, set[str]]) -> None:
        """Show what each server confirmed so far (deleted rows go, changed rows change).

        The re-join runs in a thread: at 100,000 rows it takes a few hundred milliseconds.
        If a refresh replaced a backend's snapshot meanwhile, the patch is made again on it.
        """
        host = self.host
        for name, paths in confirmed.items():
            part = action.parts[name]
            if part.kind == "delete":  # gone, not "missing": see RowCache
                host.row_cache_of(name).deleted_here.update(paths)
            while (snapshot := host.fleet.state(name).snapshot) is not None and paths:
                now = self.services.clock.now()
                new = await asyncio.to_thread(self.patched, name, snapshot, part, paths, now)
                state = host.fleet.state(name)
                if state.snapshot is snapshot:
                    host.post_message(NewerSnapshot(name, snapshot, new))
                    break

    def patched(
        self, name: str, snapshot: Snapshot, part: BulkAction, confirmed: set[str], now: datetime
    ) -> Snapshot:
        """`snapshot` as the server now holds it, given the paths it confirmed."""
        checkpoints = patch_checkpoints(snapshot.checkpoints, part, confirmed, now)
        return Snapshot.join(
            snapshot.runs,
            checkpoints,
            snapshot.discovery,
            snapshot.weights_info,
            self.host.row_cache_of(name),
            snapshot.incomplete,
        )

    def finished(self, action: FleetAction) -> None:
        """Keep the failures of a finished `action` (shown in their rows) and the action (R
        retries it)."""
        for key in action.keys:
            self.failures.pop(key, None)
        self.failures.update(action.failed)
        self.last_action = action

    def log(self, action: FleetAction) -> list[str]:
        """Log each part of a finished `action`, even as the screen goes (the user quit);
        what went wrong writing the log file."""
        services = self.services
        now = services.clock.now()
        problems = []
        for name, part in action.parts.items():
            entry = log_entry(part, part.summary(), now, services.describe_backend(name))
            problem = services.session_log.add(entry)
            if problem is not None:
                problems.append(problem)
        return problems


def outcome_notice(action: FleetAction) -> str:
    """What a finished action did, and what to do about the rest."""
    hint = ""
    if any(part.not_tried for part in action.parts.values()):
        hint = ". Stopped: those not done stay marked; R carries on, L shows the log."
    elif action.failed:
        hint = ". Failed ones stay marked; R retries them, L shows the log."
    return action.summary() + hint
