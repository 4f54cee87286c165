"""The one clock behind every time the app stores or displays.

Everything that needs "now" takes a `Clock`, so tests and screenshots can pin time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Protocol

from ckpt_tui.api_types import parse_time


class Clock(Protocol):
    """Something that tells the current UTC time."""

    def now(self) -> datetime:
        """Return the current time as an aware UTC datetime."""
        ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class FixedClock:
    """A clock that stands still until moved; for tests, screenshots and demos."""

    def __init__(self, at: datetime) -> None:
        if at.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._at = at.astimezone(timezone.utc)

    def now(self) -> datetime:
        return self._at

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward (or back, with a negative delta)."""
        self._at += delta


SYSTEM_CLOCK: Clock = SystemClock()


NOW_ENV = "CKPT_TUI_NOW"


def clock_from_environ(environ: Mapping[str, str] | None = None) -> Clock:
    """The system clock, or a fixed one when `CKPT_TUI_NOW` holds an ISO time.

    The fixed clock exists for screenshots, demos and tests that run the real command line.
    """
    env = os.environ if environ is None else environ
    text = env.get(NOW_ENV)
    if not text:
        return SYSTEM_CLOCK
    return FixedClock(parse_time(text))
