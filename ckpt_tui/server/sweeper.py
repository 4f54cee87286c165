"""The background task that removes expired checkpoints while the server runs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.concurrency import run_in_threadpool

from ckpt_tui.store import Store

logger = logging.getLogger("ckpt_tui.server.sweep")


async def sweep_once(store: Store) -> list[str]:
    """One sweep in a worker thread; errors are logged and swallowed so serving goes on."""
    try:
        removed = await run_in_threadpool(store.sweep_expired)
    except Exception:
        logger.exception("sweeping expired checkpoints failed; will try again")
        return []
    if removed:
        logger.info("removed %d expired checkpoint(s)", len(removed))
    return removed


async def sweep_forever(store: Store, interval: float) -> None:
    """Sweep every `interval` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        await sweep_once(store)


def sweeping_lifespan(
    store: Store, interval: float | None
) -> Callable[[Any], contextlib.AbstractAsyncContextManager[None]]:
    """A Starlette lifespan that runs `sweep_forever` beside the app (no task if None)."""

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if interval is None:
            yield
            return
        task = asyncio.create_task(sweep_forever(store, interval), name="ckpt-tui-sweep")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return lifespan
