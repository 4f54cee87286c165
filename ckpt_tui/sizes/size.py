"""Sizes that say how sure they are: exact, estimated (with the basis), or unknown."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Literal, TypeVar

import humanize
import msgspec

SizeKind = Literal["exact", "estimate", "partial", "unknown"]
K = TypeVar("K", bound=Hashable)


class Size(msgspec.Struct, frozen=True, gc=False):
    """A size in bytes; `basis` explains an estimate (or why a size is unknown).

    A partial size is exact for the files so far, of a checkpoint still being written.

    Every row has one: a struct untracked by the garbage collector is five times quicker to
    make than a named tuple, and smaller (a tuple subclass is never untracked, so 100,000
    of them made every full collection walk them).
    """

    kind: SizeKind
    bytes: int | None = None
    basis: str = ""

    @classmethod
    def exact(cls, n: int) -> Size:
        if n < 0:
            raise ValueError(f"a size cannot be negative: {n}")
        return cls("exact", n)

    @classmethod
    def estimate(cls, n: int, basis: str) -> Size:
        return cls("estimate", _check(n), basis)

    @classmethod
    def partial(cls, n: int) -> Size:
        return cls("partial", _check(n), "still being written")

    @classmethod
    def unknown(cls, reason: str = "") -> Size:
        return cls("unknown", None, reason)

    @property
    def is_exact(self) -> bool:
        return self.kind == "exact"

    @property
    def is_known(self) -> bool:
        return self.bytes is not None


def _check(n: int) -> int:
    if n < 0:
        raise ValueError(f"a size cannot be negative: {n}")
    return n


class SizeTotal(msgspec.Struct, frozen=True, gc=False):
    """The sum of some sizes: exact only if every part is exact; "at least" if any is unknown
    or still being written."""

    bytes: int
    part_count: int
    estimate_count: int
    unknown_count: int
    partial_count: int = 0

    @property
    def is_exact(self) -> bool:
        return self.estimate_count == 0 and self.unknown_count == 0 and self.partial_count == 0

    @property
    def is_at_least(self) -> bool:
        return self.unknown_count > 0 or self.partial_count > 0

    @property
    def is_all_unknown(self) -> bool:
        return self.part_count > 0 and self.unknown_count == self.part_count


def total(sizes: Iterable[Size]) -> SizeTotal:
    """Add sizes up, counting how many parts were estimates or unknown."""
    sizes = list(sizes)
    counts = [size.bytes for size in sizes]
    kinds = [size.kind for size in sizes]
    return SizeTotal(
        sum(filter(None, counts)),
        len(sizes),
        kinds.count("estimate"),
        counts.count(None),
        kinds.count("partial"),
    )


def sum_totals(totals: Iterable[SizeTotal]) -> SizeTotal:
    """Totals added up (e.g. every backend's), as `total` would count their parts together."""
    parts = list(totals)
    return SizeTotal(
        sum(part.bytes for part in parts),
        sum(part.part_count for part in parts),
        sum(part.estimate_count for part in parts),
        sum(part.unknown_count for part in parts),
        sum(part.partial_count for part in parts),
    )


def totals_by(items: Iterable[tuple[K, Size]]) -> dict[K, SizeTotal]:
    """One total per key (e.g. per run id), keys in first-seen order."""
    groups: dict[K, list[Size]] = {}
    for key, size in items:
        groups.setdefault(key, []).append(size)
    return {key: total(sizes) for key, sizes in groups.items()}


def format_bytes(n: int) -> str:
    """Binary units everywhere: '12.4 GiB', '512 Bytes'."""
    return str(humanize.naturalsize(n, binary=True, format="%.1f"))


def format_size(size: Size, short: bool = False) -> str:
    """'12.4 GiB' if exact, '≈ 12.4 GiB' if estimated, '?' if unknown, and
    '≥ 12.4 GiB (still being written)' for a partial size ('≥ 12.4 GiB' when `short`)."""
    if size.bytes is None:
        return "?"
    text = format_bytes(size.bytes)
    if size.kind == "partial":
        return f"≥ {text}" if short else f"≥ {text} (still being written)"
    return text if size.is_exact else f"≈ {text}"


def format_total(value: SizeTotal) -> str:
    """'12.4 GiB', '≈ 12.4 GiB', 'at least 12.4 GiB', 'at least ≈ 12.4 GiB', or '?'."""
    if value.is_all_unknown:
        return "?"
    text = format_bytes(value.bytes)
    if value.estimate_count:
        text = f"≈ {text}"
    return f"at least {text}" if value.is_at_least else text
