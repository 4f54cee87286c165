"""Fetching a whole paginated list: the first page, then every other page concurrently.

The first answer's `total_count` tells which offsets remain, so they are all requested at once
(bounded by a semaphore) instead of one after another. Pages are yielded as they arrive, each
with its offset; `collect` puts them back in server order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
Progress = Callable[[int, int], None]
"""Called as `on_progress(loaded, total)` after each page."""
FetchPage = Callable[[int, int], Awaitable["Page[T]"]]
"""`fetch(limit, offset)` -> one page."""


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its items, where it starts, and the list's total size then."""

    items: list[T]
    offset: int
    total: int


async def iter_pages(
    fetch: FetchPage[T], page_size: int = 1000, concurrency: int = 8
) -> AsyncIterator[Page[T]]:
    """Yield the first page, then the others as they arrive (in any order).

    If a later page reports a larger total (items were added meanwhile), the new tail is
    fetched too. An error in any page cancels the rest and propagates.
    """
    if page_size < 1 or concurrency < 1:
        raise ValueError("page_size and concurrency must be at least 1")
    first = await fetch(page_size, 0)
    yield first
    total, next_offset = first.total, page_size
    gate = asyncio.Semaphore(concurrency)

    async def fetch_gated(offset: int) -> Page[T]:
        async with gate:
            return await fetch(page_size, offset)

    while next_offset < total:
        offsets = range(next_offset, total, page_size)
        next_offset = offsets[-1] + page_size
        async for page in _as_completed([fetch_gated(offset) for offset in offsets]):
            total = max(total, page.total)
            yield page


async def _as_completed(coros: list[Awaitable[Page[T]]]) -> AsyncIterator[Page[T]]:
    """Run `coros` as tasks; yield results as they finish; cancel the rest on early exit."""
    tasks = [asyncio.ensure_future(coro) for coro in coros]
    try:
        for next_done in asyncio.as_completed(tasks):
            yield await next_done
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def collect(pages: AsyncIterator[Page[T]], on_progress: Progress | None = None) -> list[T]:
    """All items of `pages` in server order (by offset), reporting progress per page."""
    received: list[Page[T]] = []
    loaded = total = 0
    async for page in pages:
        received.append(page)
        loaded += len(page.items)
        total = max(total, page.total, loaded)
        if on_progress is not None:
            on_progress(loaded, total)
    received.sort(key=lambda page: page.offset)
    return [item for page in received for item in page.items]


def unique_by(items: Iterable[T], key: Callable[[T], Hashable]) -> list[T]:
    """`items` with later duplicates (same key) dropped: items can shift between pages."""
    items = list(items)
    keys = list(map(key, items))
    if len(set(keys)) == len(keys):  # the usual case, checked at C speed (100,000 items)
        return items
    seen: set[Hashable] = set()
    unique: list[T] = []
    for k, item in zip(keys, items, strict=True):
        if k not in seen:
            seen.add(k)
            unique.append(item)
    return unique
