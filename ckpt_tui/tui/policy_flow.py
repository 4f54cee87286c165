"""`k`: plan deletions by a keep policy, confirm them, and run them as one bulk action.

The scope is the runs holding the marked checkpoints; without marks, the highlighted run (the
run list's in the by-run view, the highlighted checkpoint's elsewhere); the dialog can widen it
to every run. Deleting goes through the ordinary delete dialog, so the same confirmation rules
apply; "expire instead" sets the chosen TTL on the same checkpoints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ckpt_tui.catalog import Catalog, RunSummary
from ckpt_tui.ttl import format_duration
from ckpt_tui.tui.bulk_action import EXPIRE_INSTEAD_TEXT, BulkAction
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog
from ckpt_tui.tui.screens.keep_policy import KeepPolicyScreen, PolicyOutcome

if TYPE_CHECKING:
    from ckpt_tui.tui.screens.main import MainScreen


def policy_scope(screen: MainScreen, catalog: Catalog) -> tuple[list[RunSummary], str]:
    """The runs a keep policy starts on, and how the dialog names them."""
    marks = screen.checkpoints_table.marks
    if marks:
        run_ids = {catalog.row_by_path[key].run_id for key in marks if key in catalog.row_by_path}
        runs = [run for run in catalog.runs if run.run_id in run_ids]
        count = len(marks)
        noun = "checkpoint" if count == 1 else "checkpoints"
        holding = "the run" if len(runs) == 1 else f"the {len(runs)} runs"
        return runs, f"{holding} holding the {count:,} marked {noun}"
    run_id = screen.state.run_id
    if screen.state.view != "runs":
        row = screen.checkpoints_table.cursor_value
        run_id = None if row is None else row.run_id
    run = None if run_id is None else catalog.run(run_id)
    if run is None:
        return list(catalog.runs), f"all {len(catalog.runs)} runs"
    return [run], run.display_name


async def keep_policy_flow(screen: MainScreen) -> None:
    """Open the dialog; then confirm and start the deletion, or set the TTL instead."""
    if not screen.can_change("applying a keep policy"):
        return
    catalog = screen.catalog
    if catalog is None or not catalog.runs:
        screen.notify("Nothing loaded yet: wait for the runs to appear, then press k again.")
        return
    snapshot = screen.snapshot
    if snapshot is not None and snapshot.incomplete:
        screen.notify(
            f"No keep policy on a partial list: {snapshot.incomplete}. Refresh (r) and try "
            "again once the whole list is read.",
            severity="warning",
            markup=False,
        )
        return
    runs, label = policy_scope(screen, catalog)
    app = screen.ckpt_app
    dialog = KeepPolicyScreen(
        runs,
        label,
        app.clock.now(),
        app.storage_rate,
        all_runs=list(catalog.runs),
        backend=app.describe_backend(),
    )
    outcome = await app.push_screen_wait(dialog)
    if outcome is not None:
        await carry_out(screen, outcome)


async def carry_out(screen: MainScreen, outcome: PolicyOutcome) -> None:
    rows = outcome.plan.to_delete
    paths = [row.tinker_path for row in rows]
    if outcome.mode == "ttl":
        seconds = outcome.ttl_seconds
        label = f"expire in {format_duration(seconds or 0)} (keep policy)"
        screen.start(BulkAction("ttl", paths, label, dict.fromkeys(paths, seconds)))
        return
    now = screen.ckpt_app.clock.now()
    backend = screen.ckpt_app.describe_backend()
    dialog = DeleteDialog(rows, screen.hidden_count(rows), now, backend)
    choice = await screen.app.push_screen_wait(dialog)
    if choice == "delete":
        screen.start(BulkAction("delete", paths, "delete (keep policy)"))
    elif choice == "expire":
        screen.start(
            BulkAction("expire", paths, f"expire in {EXPIRE_INSTEAD_TEXT} instead of deleting")
        )
