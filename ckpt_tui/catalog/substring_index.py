"""A case-insensitive substring filter that stays fast over 100,000 rows.

Each row's search text is lowercased once, on first use (or ahead of time, from a worker
thread); a query then runs as C-level `map`/`compress` over those strings, with no Python
call per row. While the user types, a query that contains an earlier one only searches that
one's matches, and a backspace finds its query's matches kept.

Rows and texts are held in tuples, not lists: a tuple of untracked objects (strings, the
catalog's rows, which are Structs with gc=False) drops out of Python's garbage collector after
its first collection, so a full collection no longer walks the 100,000 entries of each of the
dozen indexes a browse screen keeps (one per sort order) in the middle of a key press.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import contains
from typing import Generic, TypeVar

RowT = TypeVar("RowT")
KEPT_QUERIES = 8
"""How many of the last queries' matches an index keeps (each within the one before)."""


class SubstringIndex(Generic[RowT]):
    """Rows plus their lowercased search text, filtered by `filter(query)`."""

    def __init__(
        self, rows: Sequence[RowT], text: Callable[[RowT], str], *, lowercased: bool = False
    ) -> None:
        """Index `rows`; `text(row)` is what a query is matched against (e.g. the name).

        `lowercased`: `text` already gives lowercase text, so it is shared, not copied.
        """
        self.rows: tuple[RowT, ...] = tuple(rows)
        self._text = text
        self._lowercased = lowercased
        self._haystacks: tuple[str, ...] | None = None
        self._kept: list[tuple[str, tuple[RowT, ...], tuple[str, ...]]] = []
        """The last queries' needles, matches and their texts, each needle within the next
        (as typed): a backspace returns to one of them."""

    def haystacks(self) -> tuple[str, ...]:
        """Every row's lowercased text (safe to build ahead of time in another thread)."""
        if self._haystacks is None:
            texts = map(self._text, self.rows)
            self._haystacks = tuple(texts if self._lowercased else map(str.lower, texts))
        return self._haystacks

    def filter(self, query: str) -> list[RowT]:
        """Rows whose text contains `query` (case and surrounding spaces ignored), in order."""
        return list(self.matches(query))

    def matches(self, query: str) -> tuple[RowT, ...]:
        """`filter` without the copy: `rows` itself when every row matches (or no query)."""
        needle = query.strip().lower()
        if not needle:
            return self.rows
        within = [kept for kept in self._kept if kept[0] in needle]
        if within and within[-1][0] == needle:  # a backspace, or the same text again
            self._kept = within
            return within[-1][1]
        _, rows, haystacks = within[-1] if within else ("", self.rows, self.haystacks())
        hits = list(map(contains, haystacks, repeat(needle)))
        if False not in hits:  # the first letters of a filter often match every row
            found = (needle, rows, haystacks)
        else:
            found = (needle, tuple(compress(rows, hits)), tuple(compress(haystacks, hits)))
        self._kept = [*within, found][-KEPT_QUERIES:]
        return found[1]
