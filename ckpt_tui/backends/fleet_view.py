"""Every backend's catalog seen as one, for the views: runs and rows backend by backend.

No Textual here. A row is named by its key, (backend name, tinker path): two backends may
well hold the same path (two boxes serving copies of one store).
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import datetime
from functools import cached_property
from operator import attrgetter

from ckpt_tui.backends import Fleet
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.sizes import SizeTotal, sum_totals

RowKey = tuple[str, str]
"""(backend name, tinker path): a checkpoint row's identity across backends."""
RunKey = tuple[str, str]
"""(backend name, run id): a run's identity across backends."""
row_key = attrgetter("backend", "tinker_path")
"""A row's key, made in C (a table calls it for every row it is given)."""
run_key = attrgetter("backend", "run_id")


class FleetCatalog:
    """The runs and rows of every backend that has a snapshot, in fleet order.

    Built once per fleet (a backend's load replaces the fleet); the lookups by key are
    made on first use, since most fleets are only drawn.
    """

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        catalogs = [snapshot.catalog for snapshot in fleet.snapshots()]
        self.backends_shown = len(fleet.states)
        if len(catalogs) == 1:  # one backend: its lists as they are, no copies
            only = catalogs[0]
            self.runs, self.rows, self.stored_rows = only.runs, only.rows, only.stored_rows
        else:
            self.runs = [run for catalog in catalogs for run in catalog.runs]
            self.rows = [row for catalog in catalogs for row in catalog.rows]
            self.stored_rows = [row for catalog in catalogs for row in catalog.stored_rows]
        self.problems = [problem for catalog in catalogs for problem in catalog.problems]
        self.stored_size: SizeTotal = sum_totals(catalog.stored_size for catalog in catalogs)
        expiries = [c.soonest_expiry for c in catalogs if c.soonest_expiry is not None]
        self.soonest_expiry: datetime | None = min(expiries, default=None)

    @property
    def several(self) -> bool:
        """More than one backend is open: rows say which one holds them."""
        return self.backends_shown > 1

    @cached_property
    def row_by_key(self) -> dict[RowKey, CheckpointRow]:
        return dict(zip(map(row_key, self.rows), self.rows, strict=True))

    @cached_property
    def run_by_key(self) -> dict[RunKey, RunSummary]:
        return dict(zip(map(run_key, self.runs), self.runs, strict=True))

    def row(self, key: Hashable) -> CheckpointRow | None:
        """The row of `key` (a table's mark: a RowKey), if shown."""
        rows: dict[Hashable, CheckpointRow] = self.row_by_key  # type: ignore[assignment]
        return rows.get(key)

    def run(self, key: RunKey | None) -> RunSummary | None:
        return None if key is None else self.run_by_key.get(key)

    def runs_of(self, backend: str) -> list[RunSummary]:
        return [run for run in self.runs if run.backend == backend]
