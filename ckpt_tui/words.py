"""Counting words for messages: the one place that says "1 run" but "2 runs"."""

from __future__ import annotations


def plural(count: int, one: str, many: str | None = None) -> str:
    """`one` for exactly one thing, else `many` (by default `one` + "s"): 'is' / 'are'."""
    if count == 1:
        return one
    return one + "s" if many is None else many


def count_of(count: int, one: str, many: str | None = None) -> str:
    """The count and its word: '1 run', '2 runs', '1,024 checkpoints'."""
    return f"{count:,} {plural(count, one, many)}"
