"""Filtering, sorting and the three views over checkpoint rows; fast enough for 100,000 rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import compress, repeat
from operator import attrgetter, is_not, not_
from typing import Literal

from ckpt_tui.catalog.rows import CheckpointRow
from ckpt_tui.catalog.substring_index import SubstringIndex

SortKey = Literal["created", "size", "expiry", "name", "metric"]
SORT_KEYS: tuple[SortKey, ...] = ("created", "size", "expiry", "name", "metric")
ViewName = Literal["runs", "all", "expiring"]
VIEWS: tuple[ViewName, ...] = ("runs", "all", "expiring")
EXPIRING_WINDOWS: tuple[timedelta, ...] = (
    timedelta(hours=24),
    timedelta(days=3),
    timedelta(days=7),
    timedelta(days=30),
)


@dataclass(frozen=True)
class Sort:
    """How rows are ordered; rows without a value for the key always go last."""

    key: SortKey = "created"
    reverse: bool = False
    metric: str | None = None

    def cycled(self) -> Sort:
        following = SORT_KEYS[(SORT_KEYS.index(self.key) + 1) % len(SORT_KEYS)]
        return replace(self, key=following)

    def flipped(self) -> Sort:
        return replace(self, reverse=not self.reverse)

    def describe(self) -> str:
        label = f"metric {self.metric}" if self.key == "metric" and self.metric else self.key
        return f"{label} {'↓' if self.reverse else '↑'}"


SORT_ATTRIBUTES: dict[SortKey, str] = {
    "created": "created",
    "size": "size.bytes",
    "expiry": "expires_at",
    "name": "name",
}
"""The attribute each sort orders by (and that a row may lack: None goes last)."""


def name_order(row: CheckpointRow) -> str:
    """The name sort's key: run name, then checkpoint name, ignoring case. Made as a sort
    asks for it rather than kept on every row: the join made 100,000 of them for `ls`."""
    return f"{row.run_name}\x00{row.name}".lower()


def value_getter(sort: Sort) -> Callable[[CheckpointRow], object]:
    if sort.key == "name":
        return name_order
    if sort.key != "metric":
        return attrgetter(SORT_ATTRIBUTES[sort.key])
    metric = sort.metric
    return lambda row: None if metric is None else row.metrics.get(metric)


def has_value(rows: Sequence[CheckpointRow], sort: Sort) -> list[bool]:
    """Per row, whether it has a value for the sort key."""
    if sort.key == "metric":
        metric = sort.metric
        if metric is None:
            return [False] * len(rows)
        return [row.metrics.get(metric) is not None for row in rows]
    # map(is_not, ...) over an attrgetter: no slower than a comprehension calling the getter
    # at 100,000 rows (benchmarks/bench_catalog_idioms.py)
    return list(map(is_not, map(attrgetter(SORT_ATTRIBUTES[sort.key]), rows), repeat(None)))


def sort_rows(rows: Sequence[CheckpointRow], sort: Sort) -> list[CheckpointRow]:
    """A stable sort by the chosen key; rows without a value for it go last, in their order."""
    present = has_value(rows, sort)
    if all(present):
        valued, empty = list(rows), []
    else:
        # compress: faster than comprehensions over zip(rows, present) at 100,000 rows
        # (benchmarks/bench_catalog_idioms.py)
        valued = list(compress(rows, present))
        empty = list(compress(rows, map(not_, present)))
    valued.sort(key=value_getter(sort), reverse=sort.reverse)  # type: ignore[arg-type]
    valued += empty
    return valued


def search_index(rows: Sequence[CheckpointRow]) -> SubstringIndex[CheckpointRow]:
    """An index for filtering `rows` by their search text (name, path, run name, metadata;
    case-insensitive), key press after key press."""
    return SubstringIndex(rows, attrgetter("haystack"), lowercased=True)


def expiring_rows(
    rows: Sequence[CheckpointRow], now: datetime, window: timedelta
) -> list[CheckpointRow]:
    """Stored rows that expire within `window` from now, soonest first."""
    limit = now + window
    chosen = [
        row
        for row in rows
        if row.expires_at is not None and now < row.expires_at <= limit and not row.is_missing
    ]
    chosen.sort(key=lambda row: (row.expires_at, row.tinker_path))
    return chosen


def describe_window(window: timedelta) -> str:
    hours = int(window.total_seconds() // 3600)
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"
