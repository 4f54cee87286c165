"""Fetching a whole paginated list, and knowing whether it really is whole.

One read (`iter_pages`) asks for the first page, then for every offset not yet covered, a
window of pages at a time, the next asked for as one in the window is done: the total is the
server's word, and 10**12 of it must not become 10**9 requests up front. It advances by what
each page actually held, not by what it asked for: a server (or a proxy) that caps pages
leaves gaps, and gaps are asked for again, round after round, until every offset below
`total_count` is covered or a round adds nothing.

A whole list (`read_whole`) is one read whose pages all reported the same total and whose
distinct items number that total. A list that grew or shrank meanwhile is read again, until a
read is whole or two reads agree, at most MAX_READS times; otherwise it comes back marked
incomplete (`Listing.complete` False, with the reason), and callers must not treat it as whole.
A server that says it could not read all of its store (ckpt-tui's own, `StoreProblems`) makes
the list incomplete too, however whole its pages are; what it says is kept
(`Listing.server_problems`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Hashable, Iterator
from typing import Generic, TypeVar

import msgspec

from ckpt_tui.client.errors import ClientError

T = TypeVar("T")
Progress = Callable[[int, int], None]
"""Called as `on_progress(loaded, total)` after each page."""
FetchPage = Callable[[int, int], Awaitable["Page[T]"]]
"""`fetch(limit, offset)` -> one page."""
OnPage = Callable[["Page[T]"], Awaitable[None]]
"""Awaited with each page as it arrives (`page.read` tells a new read from the last)."""

MAX_READS = 3
"""Reads of a list that keeps changing before it is given up on as incomplete."""
MAX_ROUNDS = 16
"""Rounds of gap requests in one read (each round must cover something new)."""
MAX_ITEMS = 1_000_000
"""The most items one listing reads: ten times the 100,000 checkpoints (or runs) ckpt-tui is
built for, so a real store has room to grow, while a server that claims (and serves) 10**12
cannot keep a command reading, and its memory growing, for good. Past it the listing is
incomplete and says so."""
MAX_SERVER_PROBLEMS = 100
MAX_PROBLEM_CHARS = 1000
"""The most of a server's problems kept: its answers are untrusted input."""


class Page(msgspec.Struct, Generic[T], frozen=True):
    """One page of a list: its items, where it starts, the list's total size then, and which
    read of the list it belongs to."""

    items: list[T]
    offset: int
    total: int
    read: int = 1
    server_problems: tuple[str, ...] = ()
    """What the server said it could not read (or will not), with this page."""
    server_complete: bool = True
    """False when the server said its store could not all be read: the list is not whole."""


class Listing(msgspec.Struct, Generic[T], frozen=True):
    """A whole list, or as much as could be read (`complete` False, `problem` says why);
    `server_problems` are what the server said it could not read, or will not."""

    items: list[T]
    complete: bool
    problem: str = ""
    server_problems: list[str] = msgspec.field(default_factory=list)


class ReadReport(msgspec.Struct):
    """What one read saw: which offsets its pages covered, the totals they reported, and why
    it stopped short (a page that failed, a round that added nothing)."""

    totals: set[int] = msgspec.field(default_factory=set)
    covered: list[tuple[int, int]] = msgspec.field(default_factory=list)
    problem: str = ""
    said: dict[str, None] = msgspec.field(default_factory=dict)
    """The server's problems, in order, once each (at most MAX_SERVER_PROBLEMS)."""
    server_incomplete: bool = False
    cap: int = MAX_ITEMS
    """The most offsets this read covers (`MAX_ITEMS`): gaps past it are not asked for."""

    def add(self, page: Page[T]) -> None:
        self.totals.add(page.total)
        if page.items:
            self.covered.append((page.offset, page.offset + len(page.items)))
        self.server_incomplete = self.server_incomplete or not page.server_complete
        for line in page.server_problems:
            if len(self.said) >= MAX_SERVER_PROBLEMS:
                break
            self.said.setdefault(line[:MAX_PROBLEM_CHARS], None)

    def listing(self, items: list[T]) -> Listing[T]:
        """`items`, read whole by the pages: complete unless the server said otherwise."""
        said = list(self.said)
        if not self.server_incomplete:
            return Listing(items, True, "", said)
        problem = "the server could not read all of its store (its problems say what)"
        return Listing(items, False, problem, said)

    @property
    def total(self) -> int:
        return max(self.totals, default=0)

    @property
    def capped(self) -> bool:
        """The server claims more items than this read covers."""
        return self.total > self.cap

    def note_cap(self) -> None:
        """Say, unless something else already did, that the list is cut at the cap."""
        if self.capped and not self.problem:
            self.problem = (
                f"the server claims {self.total:,} items, more than ckpt-tui reads "
                f"({self.cap:,}): only the first {self.cap:,} were read"
            )

    @property
    def steady(self) -> bool:
        """Every page reported the same total: the list did not change during this read."""
        return len(self.totals) <= 1

    def gaps(self) -> list[tuple[int, int]]:
        """The ranges of offsets below the total that no page covered, in order."""
        found: list[tuple[int, int]] = []
        reached, total = 0, min(self.total, self.cap)
        for start, end in sorted(self.covered):
            if start > reached:
                found.append((reached, min(start, total)))
            reached = max(reached, end)
        if reached < total:
            found.append((reached, total))
        return [(start, end) for start, end in found if start < end]


async def iter_pages(
    fetch: FetchPage[T],
    page_size: int = 1000,
    concurrency: int = 8,
    report: ReadReport | None = None,
    read: int = 1,
    *,
    items_in_flight: int | None = None,
    max_items: int | None = None,
) -> AsyncIterator[Page[T]]:
    """One read: yield the first page, then the others as they arrive (in any order).

    At most `concurrency` pages are asked for at once, and with `items_in_flight`, fewer when
    the server's pages are big (at least one): a server that caps pages gets as many requests
    in flight as needed to hide latency, and big pages do not all sit in memory at once.
    Gaps (pages that held fewer items than asked, a total that grew) are asked for again
    until every offset below the total is covered. The first page's error propagates; a later
    page's error, or a round that covers nothing new (the list shrank), ends the read early
    with `report.problem` set. Nothing beyond an empty page is asked for, and a window's worth
    of failures in a row ends the round at once: a total the pages do not bear out is never
    unbounded work, and never a whole list. Nothing at or past `max_items` (`MAX_ITEMS`) is
    asked for: a longer list ends the read with `report.problem` saying so.
    """
    if page_size < 1 or concurrency < 1:
        raise ValueError("page_size and concurrency must be at least 1")
    report = ReadReport() if report is None else report
    report.cap = MAX_ITEMS if max_items is None else max_items
    page_size = max(1, min(page_size, report.cap))
    first = _as_read(await fetch(page_size, 0), read)
    report.add(first)
    yield first
    step = max(1, min(page_size, len(first.items)))  # what the server really serves a page
    if items_in_flight is not None:
        concurrency = max(1, min(concurrency, items_in_flight // step))

    async def fetch_one(limit: int, offset: int) -> Page[T] | ClientError:
        try:
            return _as_read(await fetch(limit, offset), read)
        except ClientError as exc:
            return exc

    for _round in range(MAX_ROUNDS):
        gaps = report.gaps()
        if not gaps:
            report.note_cap()
            return
        before = sum(end - start for start, end in gaps)
        failed_in_a_row = 0
        frontier = _Frontier(min(report.total, report.cap))
        requests = frontier.requests(gaps, step)  # lazily: the total is the server's word
        async with contextlib.aclosing(_windowed(fetch_one, requests, concurrency)) as results:
            async for result in results:
                if isinstance(result, ClientError):
                    report.problem = report.problem or f"a page could not be read: {result.message}"
                    failed_in_a_row += 1
                    if failed_in_a_row >= concurrency:
                        break  # the server fails everywhere: asking on is no use
                    continue
                failed_in_a_row = 0
                report.add(result)
                step = max(step, min(page_size, len(result.items)))
                yield result
                if not result.items:  # nothing where the total says items are: the list
                    frontier.end = min(frontier.end, result.offset)  # shrank, or it lies
        if report.problem:
            return
        after = sum(end - start for start, end in report.gaps())
        if after >= before and report.steady:
            report.problem = f"the server listed {report.total:,} items but served fewer"
            return
        if after >= before:
            return  # the list changed under this read: read it again
    report.problem = f"still not covered after {MAX_ROUNDS} rounds of requests"


class _Frontier:
    """How far one round asks: not past the lowest offset where a page came back empty."""

    def __init__(self, end: int) -> None:
        self.end = end

    def requests(self, gaps: list[tuple[int, int]], step: int) -> Iterator[tuple[int, int]]:
        """(limit, offset) of the pages that cover `gaps`, `step` items a page, while they
        start below `end` (which an empty page moves down meanwhile)."""
        for start, end in gaps:
            for offset in range(start, end, step):
                if offset >= self.end:
                    return
                yield min(step, end - offset), offset


def _as_read(page: Page[T], read: int) -> Page[T]:
    if page.read == read:
        return page
    return Page(
        page.items, page.offset, page.total, read, page.server_problems, page.server_complete
    )


async def read_whole(
    fetch: FetchPage[T],
    key: Callable[[T], Hashable],
    page_size: int = 1000,
    concurrency: int = 8,
    on_page: OnPage[T] | None = None,
    *,
    items_in_flight: int | None = None,
    max_items: int | None = None,
) -> Listing[T]:
    """Read the list until a read is whole or two reads agree (at most MAX_READS reads).

    Items come back in server order (by offset), later duplicates dropped. The first page's
    error propagates; any other shortfall gives `Listing(..., complete=False, problem=...)`.
    A list longer than `max_items` (`MAX_ITEMS`) is read once, up to there, and incomplete.
    """
    earlier: frozenset[Hashable] | None = None
    listing: Listing[T] = Listing([], False)
    for read in range(1, MAX_READS + 1):
        report = ReadReport()
        pages: list[Page[T]] = []
        pages_read = iter_pages(
            fetch,
            page_size,
            concurrency,
            report,
            read,
            items_in_flight=items_in_flight,
            max_items=max_items,
        )
        async for page in pages_read:
            pages.append(page)
            if on_page is not None:
                await on_page(page)
        pages.sort(key=lambda page: page.offset)
        items = unique_by([item for page in pages for item in page.items], key)
        if report.capped:  # reading it again would only read as much again
            return Listing(items, False, report.problem, list(report.said))
        covered = not report.gaps() and not report.problem
        if covered and len(items) == report.total and report.steady:
            return report.listing(items)
        keys = frozenset(map(key, items))  # only now: 100,000 keys take a while
        if covered and len(items) == report.total and keys == earlier:
            return report.listing(items)
        earlier = keys if covered else None
        problem = report.problem or _changed(report, len(items))
        listing = Listing(items, False, problem, list(report.said))
    return listing


def _changed(report: ReadReport, distinct: int) -> str:
    totals = ", ".join(f"{total:,}" for total in sorted(report.totals))
    return (
        f"the list changed while it was read {MAX_READS} times (totals {totals}; "
        f"{distinct:,} distinct items)"
    )


async def _windowed(
    fetch_one: Callable[[int, int], Awaitable[Page[T] | ClientError]],
    requests: Iterator[tuple[int, int]],
    window: int,
) -> AsyncGenerator[Page[T] | ClientError, None]:
    """Fetch the pages `requests` names, at most `window` at once, as they are needed: yield
    results as they finish; cancel the rest on early exit."""
    pending: set[asyncio.Task[Page[T] | ClientError]] = set()
    try:
        while True:
            for limit, offset in itertools.islice(requests, window - len(pending)):
                pending.add(asyncio.ensure_future(fetch_one(limit, offset)))
            if not pending:
                return
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                yield task.result()
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def unique_by(items: list[T], key: Callable[[T], Hashable]) -> list[T]:
    """`items` (itself when there is no duplicate) with later duplicates (same key) dropped:
    items can shift between pages."""
    if len(set(map(key, items))) == len(items):  # the usual case, at C speed (100,000 items)
        return items
    keys = list(map(key, items))
    seen: set[Hashable] = set()
    unique: list[T] = []
    for k, item in zip(keys, items, strict=True):
        if k not in seen:
            seen.add(k)
            unique.append(item)
    return unique
