"""`K`: plan deletions by a keep policy, confirm them, and run them as one bulk action.

The scope is the runs holding the marked checkpoints; without marks, the highlighted run (the
run list's in the by-run view, the highlighted checkpoint's elsewhere), or every run of a
highlighted backend row; the dialog can widen it to every run. Deleting goes through the
ordinary delete dialog, so the same confirmation rules apply; "expire instead" sets the chosen
TTL on the same checkpoints.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from ckpt_tui.actions.fleet_action import FleetAction
from ckpt_tui.actions.owners import Targets
from ckpt_tui.backends.fleet_view import FleetCatalog, RunKey, row_key, run_key
from ckpt_tui.catalog import RunSummary
from ckpt_tui.timekeeping.ttl import format_duration
from ckpt_tui.tui.screens.browse.changes import Changes
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog, PolicyOutcome


@dataclass(frozen=True)
class Selection:
    """What the user points at on the browse screen: marked checkpoints and the highlighted run."""

    marks: frozenset[Hashable] = frozenset()
    highlighted_run: RunKey | None = None
    """The run list's highlighted run in the by-run view, else the highlighted checkpoint's."""


def policy_scope(selection: Selection, catalog: FleetCatalog) -> tuple[list[RunSummary], str]:
    """The runs a keep policy starts on, and how the dialog names them."""
    marks = selection.marks
    if marks:
        marked = [row for row in map(catalog.row, marks) if row is not None]
        run_keys = {(row.backend, row.run_id) for row in marked}
        runs = [run for run in catalog.runs if run_key(run) in run_keys]
        count = len(marks)
        noun = "checkpoint" if count == 1 else "checkpoints"
        holding = "the run" if len(runs) == 1 else f"the {len(runs)} runs"
        return runs, f"{holding} holding the {count:,} marked {noun}"
    key = selection.highlighted_run
    run = catalog.run(key)
    if run is not None:
        return [run], run.display_name
    if key is not None and key[1] == "":  # a backend's own row: that backend's runs
        runs = [run for run in catalog.runs if run.backend == key[0]]
        return runs, f"all {len(runs)} runs on {key[0]}"
    return list(catalog.runs), f"all {len(catalog.runs)} runs"


def selection_of(changes: Changes) -> Selection:
    host = changes.host
    table, state = host.checkpoints_table, host.state
    key = state.run_key
    if state.view != "runs":
        row = table.cursor_value
        key = None if row is None else (row.backend, row.run_id)
    return Selection(table.marks, key)


async def keep_policy_flow(changes: Changes) -> None:
    """Open the dialog; then confirm and start the deletion, or set the TTL instead."""
    if not changes.can_change("applying a keep policy"):
        return
    host = changes.host
    catalog = host.catalog
    if catalog is None or not catalog.runs:
        host.notify("Nothing loaded yet: wait for the runs to appear, then press k again.")
        return
    partial = host.fleet.incomplete()
    if partial:
        host.notify(
            f"No keep policy on a partial list: {'; '.join(partial)}. Refresh (r) and try "
            "again once the whole list is read.",
            severity="warning",
            markup=False,
        )
        return
    runs, label = policy_scope(selection_of(changes), catalog)
    services = changes.services
    dialog = KeepPolicyDialog(
        runs,
        label,
        services.clock.now(),
        {state.name: state.rate for state in host.fleet.states},
        all_runs=list(catalog.runs),
        describe=services.describe_backend,
    )
    outcome = await host.app.push_screen_wait(dialog)
    if outcome is not None:
        await start_plan(changes, outcome)


async def start_plan(changes: Changes, outcome: PolicyOutcome) -> None:
    """Each backend's part to its owner; a read-only backend's part is left out, and said so.
    The deletions run as one `FleetAction`, as `prune`'s do (`ckpt_tui.actions.keep_policy`),
    once the delete dialog has confirmed them."""
    targets = Targets.split(outcome.plan.to_delete, changes.services.connections)
    rows = targets.rows
    if not rows:
        changes.host.notify(
            "Nothing to change: every checkpoint the policy would remove is on a read-only "
            "backend.",
            severity="warning",
        )
        return
    if outcome.mode == "ttl":
        seconds = outcome.ttl_seconds
        label = f"expire in {format_duration(seconds or 0)} (keep policy)"
        changes.start(
            FleetAction.of("ttl", rows, label, dict.fromkeys(map(row_key, rows), seconds))
        )
        return
    choice = await changes.host.app.push_screen_wait(changes.delete_dialog(targets))
    changes.delete_chosen(rows, "delete (keep policy)", choice)
