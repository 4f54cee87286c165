"""The fleet: every open backend's state, in order, and views across all of them.

Immutable: each backend's load replaces only its own entry (`Fleet.with_backend`), so one
slow or failing backend never holds back what the others show. A single backend is a fleet
of one. Rows and runs carry their backend's name (`CheckpointRow.backend`); a row's
identity across backends is (backend name, tinker path).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal

import msgspec

from ckpt_tui.backends.descriptor import RATE_DEFAULT, Backend, RateSource
from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.cost import MonthlyCost, monthly_cost
from ckpt_tui.sizes import SizeTotal, sum_totals

NO_SIZE = SizeTotal(0, 0, 0, 0)

ErrorKind = Literal["unreachable", "key refused"]
"""How a backend's state names its error: `key refused` when it answered and refused the
key (a retry sends the same key: the fix is where the key came from), else `unreachable`."""
UNREACHABLE: ErrorKind = "unreachable"
KEY_REFUSED: ErrorKind = "key refused"


class BackendState(msgspec.Struct, frozen=True):
    """What is known about one backend at one moment."""

    backend: Backend
    snapshot: Snapshot | None = None
    """Its latest snapshot (a partial one while pages arrive); None until the first."""
    error: str | None = None
    """What went wrong and what to do (the last load failed); None when it did not."""
    complete: bool = False
    """The load finished and its lists were read whole: plans may act on it."""
    latency: float | None = None
    """Seconds one request took (None until measured)."""
    rate: float | None = None
    """USD per GiB-month its costs use (None: no cost is shown)."""
    rate_source: RateSource = RATE_DEFAULT
    error_kind: ErrorKind = UNREACHABLE
    """What the error is, in two words, where the state is shown (header, `ls`)."""

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def failed_mark(self) -> str:
        """What a failed backend's row says after its ✗: 'key refused' (a retry would send
        the same key), or 'r retries'."""
        return KEY_REFUSED if self.error_kind == KEY_REFUSED else "r retries"

    @property
    def loading(self) -> bool:
        """Nothing shown yet: no snapshot and no error."""
        return self.snapshot is None and self.error is None

    @property
    def incomplete(self) -> str:
        """Why its list is not whole ("" when it is): an error, still loading, or partial."""
        if self.complete:
            return ""
        if self.error is not None:
            return f"{self.name}: {self.error}"
        if self.snapshot is not None and self.snapshot.incomplete:
            return f"{self.name}: {self.snapshot.incomplete}"
        return f"{self.name}: still loading"

    def replace(self, **changes: object) -> BackendState:
        """A copy with `changes` (e.g. `state.replace(error=None)` on a retry)."""
        return msgspec.structs.replace(self, **changes)

    def totals(self) -> Totals:
        snapshot = self.snapshot
        if snapshot is None:
            return Totals(0, 0, 0, NO_SIZE, None, None)
        catalog = snapshot.catalog
        stored = len(catalog.stored_rows)
        size = catalog.stored_size
        cost = None if self.rate is None else monthly_cost(size, self.rate)
        return Totals(
            len(catalog.runs),
            stored,
            len(catalog.rows) - stored,
            size,
            catalog.soonest_expiry,
            cost,
            (self.name,) if self.rate is None and stored else (),
        )


class Totals(msgspec.Struct, frozen=True):
    """Counts, size, soonest expiry and monthly cost of one backend or of all of them."""

    runs: int
    checkpoints: int
    """Stored checkpoints (not the missing ones)."""
    missing: int
    """Named by a training log, gone from the server."""
    size: SizeTotal
    soonest_expiry: datetime | None
    cost: MonthlyCost | None
    """None when no backend counted here has a rate."""
    unpriced: tuple[str, ...] = ()
    """Backends with checkpoints but no rate: their share is not in `cost`."""


class Fleet(msgspec.Struct, frozen=True):
    """The open backends' states, in the order they were given (names are unique)."""

    states: tuple[BackendState, ...]

    def __post_init__(self) -> None:
        names = [state.name for state in self.states]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"backend names must be unique; given twice: {', '.join(twice)}")

    @classmethod
    def loading(cls, backends: Iterable[Backend]) -> Fleet:
        """Every backend, nothing loaded yet."""
        return cls(tuple(BackendState(backend) for backend in backends))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(state.name for state in self.states)

    @property
    def backends(self) -> tuple[Backend, ...]:
        return tuple(state.backend for state in self.states)

    def state(self, name: str) -> BackendState:
        """The state of the backend named `name`; KeyError naming the known ones if none."""
        for state in self.states:
            if state.name == name:
                return state
        raise KeyError(f"no backend named {name!r}; open ones: {', '.join(self.names)}")

    def with_backend(self, name: str, state: BackendState) -> Fleet:
        """A new fleet in which `state` replaces the backend `name`'s entry (same place)."""
        if state.name != name:
            raise ValueError(f"the state of backend {state.name!r} cannot replace {name!r}")
        self.state(name)  # KeyError for an unknown name
        return Fleet(tuple(state if old.name == name else old for old in self.states))

    # --- across backends ---------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        """The snapshots there are, in backend order (loading or failed backends have none)."""
        return [state.snapshot for state in self.states if state.snapshot is not None]

    def rows(self) -> list[CheckpointRow]:
        """Every backend's rows (missing ones included), backend by backend. O(rows): keep it."""
        return [row for snapshot in self.snapshots() for row in snapshot.catalog.rows]

    def stored_rows(self) -> list[CheckpointRow]:
        """Every backend's stored rows (not the missing ones), backend by backend."""
        return [row for snapshot in self.snapshots() for row in snapshot.catalog.stored_rows]

    def runs(self) -> list[RunSummary]:
        """Every backend's runs, backend by backend (each backend's newest first)."""
        return [run for snapshot in self.snapshots() for run in snapshot.catalog.runs]

    def choose_runs(self, wanted: Sequence[str]) -> list[RunSummary] | None:
        """All runs, or those any backend names `wanted` by id or display name (every
        backend's that match); None when a wanted name matches no run anywhere."""
        runs = self.runs()
        if not wanted:
            return runs
        chosen = [run for run in runs if run.run_id in wanted or run.display_name in wanted]
        matched = {run.run_id for run in chosen} | {run.display_name for run in chosen}
        return chosen if all(name in matched for name in wanted) else None

    def row(self, backend: str, tinker_path: str) -> CheckpointRow | None:
        """The row whose identity is (backend, tinker_path), if it is shown."""
        snapshot = self.state(backend).snapshot
        return None if snapshot is None else snapshot.catalog.row_by_path.get(tinker_path)

    def by_backend(self, rows: Iterable[CheckpointRow]) -> dict[str, list[CheckpointRow]]:
        """`rows` grouped by their backend, in fleet order (backends with none left out): what
        goes to each owner's client."""
        groups: dict[str, list[CheckpointRow]] = {name: [] for name in self.names}
        for row in rows:
            groups.setdefault(row.backend, []).append(row)
        return {name: group for name, group in groups.items() if group}

    # --- totals ------------------------------------------------------------------------------
    def totals(self) -> dict[str, Totals]:
        """Each backend's totals, by name in fleet order."""
        return {state.name: state.totals() for state in self.states}

    def total(self) -> Totals:
        """All backends together (a cost only over the backends that have a rate)."""
        return combined(list(self.totals().values()))

    # --- whole or not ------------------------------------------------------------------------
    @property
    def complete(self) -> bool:
        """Every backend loaded whole, with no error."""
        return all(state.complete for state in self.states)

    def incomplete(self) -> list[str]:
        """Why each backend that is not whole is not (see `BackendState.incomplete`)."""
        return [state.incomplete for state in self.states if not state.complete]

    def errors(self) -> dict[str, str]:
        """The error of each backend whose last load failed, by name."""
        return {state.name: state.error for state in self.states if state.error is not None}


def combined(parts: Sequence[Totals]) -> Totals:
    """Totals added up; a cost sums the parts that have one ("at least" if any is unpriced)."""
    costs = [part.cost for part in parts if part.cost is not None]
    unpriced = tuple(name for part in parts for name in part.unpriced)
    cost = None
    if costs:
        cost = MonthlyCost(
            sum(c.usd for c in costs),
            at_least=bool(unpriced) or any(c.at_least for c in costs),
            estimated=any(c.estimated for c in costs),
        )
    expiries = [part.soonest_expiry for part in parts if part.soonest_expiry is not None]
    return Totals(
        sum(part.runs for part in parts),
        sum(part.checkpoints for part in parts),
        sum(part.missing for part in parts),
        sum_totals(part.size for part in parts),
        min(expiries, default=None),
        cost,
        unpriced,
    )
