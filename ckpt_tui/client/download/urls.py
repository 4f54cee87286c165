"""The signed URLs of one checkpoint, asked for again before they expire."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from ckpt_tui.api_types import SignedUrls
from ckpt_tui.timekeeping.clock import Clock

RESIGN_BEFORE = timedelta(minutes=5)
"""URLs closer than this to expiring are asked for again (as the official CLI does)."""


class UrlBook:
    """Hands out each file's URL, fetching a fresh set first when the current one is within
    RESIGN_BEFORE (or half its lifetime, for short-lived URLs) of expiring."""

    def __init__(self, fetch: Callable[[], Awaitable[SignedUrls]], clock: Clock) -> None:
        self._fetch = fetch
        self._clock = clock
        self._lock = asyncio.Lock()
        self._urls: SignedUrls | None = None
        self._fetched_at: datetime | None = None
        self.fetches = 0

    async def current(self) -> SignedUrls:
        async with self._lock:
            if self._urls is None or self._stale(self._urls):
                await self._refresh()
            assert self._urls is not None
            return self._urls

    async def url(self, key: str) -> str:
        return (await self.current()).urls[key]

    async def renew(self) -> None:
        """Fetch a fresh set now (a URL was refused)."""
        async with self._lock:
            await self._refresh()

    async def _refresh(self) -> None:
        self._fetched_at = self._clock.now()
        self._urls = await self._fetch()
        self.fetches += 1

    def _stale(self, urls: SignedUrls) -> bool:
        assert self._fetched_at is not None
        margin = min(RESIGN_BEFORE, (urls.expires - self._fetched_at) / 2)
        return self._clock.now() >= urls.expires - margin
