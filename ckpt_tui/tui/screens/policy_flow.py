"""`k`: plan deletions by a keep policy, confirm them, and run them as one bulk action.

The scope is the runs holding the marked checkpoints; without marks, the highlighted run (the
run list's in the by-run view, the highlighted checkpoint's elsewhere); the dialog can widen it
to every run. Deleting goes through the ordinary delete dialog, so the same confirmation rules
apply; "expire instead" sets the chosen TTL on the same checkpoints.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from ckpt_tui.catalog import Catalog, RunSummary
from ckpt_tui.ttl import format_duration
from ckpt_tui.tui.bulk_action import BulkAction
from ckpt_tui.tui.screens.changes import Changes
from ckpt_tui.tui.screens.keep_policy import KeepPolicyScreen, PolicyOutcome


@dataclass(frozen=True)
class Selection:
    """What the user points at on the browse screen: marked checkpoints and the highlighted run."""

    marks: frozenset[Hashable] = frozenset()
    highlighted_run: str | None = None
    """The run list's highlighted run in the by-run view, else the highlighted checkpoint's."""


def policy_scope(selection: Selection, catalog: Catalog) -> tuple[list[RunSummary], str]:
    """The runs a keep policy starts on, and how the dialog names them."""
    marks = selection.marks
    if marks:
        run_ids = {catalog.row_by_path[key].run_id for key in marks if key in catalog.row_by_path}
        runs = [run for run in catalog.runs if run.run_id in run_ids]
        count = len(marks)
        noun = "checkpoint" if count == 1 else "checkpoints"
        holding = "the run" if len(runs) == 1 else f"the {len(runs)} runs"
        return runs, f"{holding} holding the {count:,} marked {noun}"
    run_id = selection.highlighted_run
    run = None if run_id is None else catalog.run(run_id)
    if run is None:
        return list(catalog.runs), f"all {len(catalog.runs)} runs"
    return [run], run.display_name


def selection_of(changes: Changes) -> Selection:
    host = changes.host
    table, state = host.checkpoints_table, host.state
    run_id = state.run_id
    if state.view != "runs":
        row = table.cursor_value
        run_id = None if row is None else row.run_id
    return Selection(table.marks, run_id)


async def keep_policy_flow(changes: Changes) -> None:
    """Open the dialog; then confirm and start the deletion, or set the TTL instead."""
    if not changes.can_change("applying a keep policy"):
        return
    host = changes.host
    snapshot = host.snapshot
    if snapshot is None or not snapshot.catalog.runs:
        host.notify("Nothing loaded yet: wait for the runs to appear, then press k again.")
        return
    if snapshot.incomplete:
        host.notify(
            f"No keep policy on a partial list: {snapshot.incomplete}. Refresh (r) and try "
            "again once the whole list is read.",
            severity="warning",
            markup=False,
        )
        return
    catalog = snapshot.catalog
    runs, label = policy_scope(selection_of(changes), catalog)
    services = changes.services
    dialog = KeepPolicyScreen(
        runs,
        label,
        services.clock.now(),
        services.storage_rate,
        all_runs=list(catalog.runs),
        backend=services.describe_backend(),
    )
    outcome = await host.app.push_screen_wait(dialog)
    if outcome is not None:
        await carry_out(changes, outcome)


async def carry_out(changes: Changes, outcome: PolicyOutcome) -> None:
    rows = outcome.plan.to_delete
    paths = [row.tinker_path for row in rows]
    if outcome.mode == "ttl":
        seconds = outcome.ttl_seconds
        label = f"expire in {format_duration(seconds or 0)} (keep policy)"
        changes.start(BulkAction("ttl", paths, label, dict.fromkeys(paths, seconds)))
        return
    choice = await changes.host.app.push_screen_wait(changes.delete_dialog(rows))
    changes.delete_chosen(paths, "delete (keep policy)", choice)
