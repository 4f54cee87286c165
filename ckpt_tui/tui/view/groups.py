"""The runs pane over several backends: a row per backend, its runs under it unless folded.

No Textual here. A backend's row counts its checkpoints, size, cost (saying where the rate
came from) and soonest expiry; a backend that failed says why and what to do, one that is
loading says so. With one backend open there are no group rows: the pane is as it was.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

import msgspec

from ckpt_tui.backends import RATE_FROM_BILLING, RATE_SET_BY_YOU, BackendState, Fleet, Totals
from ckpt_tui.catalog import RunSummary
from ckpt_tui.cost import MonthlyCost, format_cost, monthly_cost
from ckpt_tui.sizes import format_total
from ckpt_tui.tui.view.render import expiry_cell, run_cells
from ckpt_tui.tui.widgets import Cell

SOURCE_WORDS = {RATE_FROM_BILLING: "billing", RATE_SET_BY_YOU: "yours"}
"""How a cost cell says where its rate came from (the default rate shows no cost)."""


class BackendGroup(msgspec.Struct, frozen=True):
    """A backend's row in the runs pane. `run_id` is "": the pane's key (backend, run id)
    names it apart from every run."""

    backend: str
    state: BackendState
    totals: Totals
    folded: bool
    loading: bool
    run_id: str = ""


RunsEntry = RunSummary | BackendGroup
"""One line of the runs pane."""


def grouped_runs(
    fleet: Fleet,
    runs: Sequence[RunSummary],
    folded: Collection[str],
    loading: Collection[str],
    filtering: bool = False,
) -> list[RunsEntry]:
    """Each backend's row, in fleet order, then its `runs` (already filtered and sorted)
    unless it is folded. While filtering, a backend with no match and no error is left out."""
    by_backend: dict[str, list[RunSummary]] = {name: [] for name in fleet.names}
    for run in runs:
        by_backend.setdefault(run.backend, []).append(run)
    totals = fleet.totals()
    entries: list[RunsEntry] = []
    for state in fleet.states:
        name = state.name
        its_runs = by_backend.get(name, [])
        if filtering and not its_runs and state.error is None:
            continue
        is_folded = name in folded
        entries.append(BackendGroup(name, state, totals[name], is_folded, name in loading))
        if not is_folded:
            entries.extend(its_runs)
    return entries


def cost_text(cost: MonthlyCost | None, state: BackendState) -> str:
    """'$1.23 billing' (the backend's billing endpoint), '$0.50 yours' (a rate you set), or
    '' without a rate."""
    if cost is None:
        return ""
    source = SOURCE_WORDS.get(state.rate_source)
    return format_cost(cost).removesuffix("/mo") + (f" {source}" if source else "")


def group_cells(group: BackendGroup, now: datetime, keys: Sequence[str]) -> list[Cell]:
    """A backend's row: '▾ box1' (and its error or state), its counts, size, cost, expiry."""
    state, totals = group.state, group.totals
    arrow = "▸" if group.folded else "▾"
    name = Cell(f"{arrow} {group.backend}", "bold")
    where = state.backend.place + (" · read-only" if state.backend.readonly else "")
    if state.error is not None:  # the whole error shows below, with the row highlighted
        name = Cell(f"{arrow} {group.backend} ✗ {state.failed_mark}", "error")
        where = state.error
    elif state.snapshot is None:
        name = Cell(f"{arrow} {group.backend} loading…", "dim")
    loaded = state.snapshot is not None
    values = {
        "name": name,
        "model": Cell(where, "error" if state.error is not None else "dim"),
        "count": Cell(f"{totals.checkpoints:,}" if loaded else "", "bold"),
        "size": Cell(format_total(totals.size) if totals.checkpoints else "", "bold"),
        "cost": Cell(cost_text(totals.cost, state), "bold"),
        "expiry": expiry_cell(totals.soonest_expiry, now) if totals.soonest_expiry else Cell(""),
        "missing": Cell(f"⚠ {totals.missing}", "warning") if totals.missing else Cell(""),
    }
    return [values[key] for key in keys]


def entry_cells(
    entry: RunsEntry, now: datetime, keys: Sequence[str], states: dict[str, BackendState]
) -> list[Cell]:
    """The cells of a runs-pane line: a backend's row, or a run (with its cost, at its
    backend's rate)."""
    if isinstance(entry, BackendGroup):
        return group_cells(entry, now, keys)
    cells = run_cells(entry, now, [key for key in keys if key != "cost"])
    if "cost" in keys:
        state = states.get(entry.backend)
        cost = None
        if state is not None and state.rate is not None and entry.stored_rows:
            cost = monthly_cost(entry.size, state.rate)
        cells.insert(keys.index("cost"), Cell(cost_text(cost, state) if state else ""))
    return cells
