"""Waiting in a test for a state that a server or an app reaches on its own time: checked
between short pauses, up to a bound that only a broken state reaches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

WAIT = 20.0
"""Seconds a test waits for a state it expects (it normally comes in milliseconds)."""
STEP = 0.01


async def until(
    condition: Callable[[], bool],
    pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Return once `condition()` holds; AssertionError after `WAIT` seconds of pauses.
    In a Pilot test, pass `pilot.pause`, so the app runs between the checks."""
    for _ in range(int(WAIT / STEP)):
        if condition():
            return
        await pause(STEP)
    raise AssertionError("the expected state did not come")
