"""`K`: plan deletions by a keep policy, confirm them, and run them as one bulk action.

What the screen asks here, given what it shows: why no policy can be planned now, the
dialog, and what a chosen policy changes; the screen shows the notices and dialogs and hands
the change to `Changes`, so nothing here calls back into it.

The scope is the runs holding the marked checkpoints; without marks, the highlighted run (the
run list's in the by-run view, the highlighted checkpoint's elsewhere), or every run of a
highlighted backend row; the dialog can widen it to every run. Deleting goes through the
ordinary delete dialog, so the same confirmation rules apply; "expire instead" sets the chosen
TTL on the same checkpoints.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from textual.notifications import SeverityLevel

from ckpt_tui.actions.fleet_action import FleetAction
from ckpt_tui.actions.owners import Targets
from ckpt_tui.backends import Connection, Fleet
from ckpt_tui.backends.fleet_view import FleetCatalog, RunKey, row_key, run_key
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.timekeeping.ttl import format_duration
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog, PolicyOutcome
from ckpt_tui.tui.view.state import BrowseState


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


def selection_of(
    state: BrowseState, marks: frozenset[Hashable], cursor: CheckpointRow | None
) -> Selection:
    """The marks, and the run list's highlighted run in the by-run view, else the
    highlighted checkpoint's run."""
    key = state.run_key
    if state.view != "runs":
        key = None if cursor is None else (cursor.backend, cursor.run_id)
    return Selection(marks, key)


def why_not_now(catalog: FleetCatalog | None, fleet: Fleet) -> tuple[str, SeverityLevel] | None:
    """Why no keep policy can be planned now (nothing loaded, or a partial list), and how
    the notice says it; None when one can."""
    if catalog is None or not catalog.runs:
        return "Nothing loaded yet: wait for the runs to appear, then press k again.", "information"
    partial = fleet.incomplete()
    if partial:
        return (
            f"No keep policy on a partial list: {'; '.join(partial)}. Refresh (r) and try "
            "again once the whole list is read.",
            "warning",
        )
    return None


def policy_dialog(
    selection: Selection, catalog: FleetCatalog, fleet: Fleet, services: Services
) -> KeepPolicyDialog:
    runs, label = policy_scope(selection, catalog)
    return KeepPolicyDialog(
        runs,
        label,
        services.clock.now(),
        {state.name: state.rate for state in fleet.states},
        all_runs=list(catalog.runs),
        describe=services.describe_backend,
    )


NOTHING_TO_CHANGE = (
    "Nothing to change: every checkpoint the policy would remove is on a read-only backend."
)


def planned_change(
    outcome: PolicyOutcome, connections: Mapping[str, Connection]
) -> FleetAction | Targets | None:
    """What a chosen policy does: TTLs set at once (a `FleetAction`), or deletions that the
    delete dialog confirms first (their `Targets`), as `prune`'s run as one action
    (`ckpt_tui.actions.keep_policy`); None when every one is on a read-only backend (each
    backend's part goes to its owner, a read-only one's is left out, and said so)."""
    targets = Targets.split(outcome.plan.to_delete, connections)
    rows = targets.rows
    if not rows:
        return None
    if outcome.mode == "ttl":
        seconds = outcome.ttl_seconds
        label = f"expire in {format_duration(seconds or 0)} (keep policy)"
        return FleetAction.of("ttl", rows, label, dict.fromkeys(map(row_key, rows), seconds))
    return targets
