"""How fast work goes and how long is left: one meter for every progress display (a bulk
change's items, a download's bytes), on the terminal and in the TUI."""

from __future__ import annotations

import time
from collections.abc import Callable


def duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class RateMeter:
    """`update(done)` as work gets done; `rate` (per second) and `seconds_left` from the
    average since it was made. Work done before (`done`, e.g. a resumed download's bytes)
    does not count as speed."""

    def __init__(
        self, total: int, clock: Callable[[], float] = time.monotonic, done: int = 0
    ) -> None:
        self.total, self.clock = total, clock
        self.done = self.done_at_start = done
        self.started = clock()

    def update(self, done: int) -> None:
        self.done = done

    @property
    def rate(self) -> float | None:
        """Units per second so far; None before any time or work has passed."""
        elapsed, gained = self.clock() - self.started, self.done - self.done_at_start
        return gained / elapsed if elapsed > 0 and gained > 0 else None

    @property
    def seconds_left(self) -> float | None:
        rate = self.rate
        return None if rate is None else max(0, self.total - self.done) / rate

    def left_text(self) -> str:
        """'2m05s left', or '' while the rate is not known yet."""
        left = self.seconds_left
        return "" if left is None else f"{duration(left)} left"

    def counts(self) -> str:
        """'250/1,000 · 480/s · 2s left' (the rate and time left once known)."""
        line = f"{self.done:,}/{self.total:,}"
        rate = self.rate
        return line if rate is None else f"{line} · {rate:,.0f}/s · {self.left_text()}"
