"""One updating line on the terminal while a bulk change runs: done/total, rate, time left.

Written to stderr only when stderr is a terminal (and not under --json), so a pipe or a log
file gets the outcome lines and nothing else. Updates are at most `INTERVAL` seconds apart
except the last (done == total), which is always written, then the line is cleared.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from ckpt_tui.timekeeping.rate import RateMeter

INTERVAL = 0.1
CLEAR = "\r\x1b[2K"


class ProgressLine:
    """`update(done)` after each item; `finish()` clears the line."""

    def __init__(
        self,
        verb: str,
        total: int,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.verb, self.total, self.stream, self.clock = verb, total, stream, clock
        self.meter = RateMeter(total, clock)
        self.shown_at: float | None = None

    @property
    def done(self) -> int:
        return self.meter.done

    def update(self, done: int) -> None:
        self.meter.update(done)
        now = self.clock()
        if done < self.total and self.shown_at is not None and now - self.shown_at < INTERVAL:
            return
        self.shown_at = now
        self.stream.write(CLEAR + self.text())
        self.stream.flush()

    def text(self) -> str:
        """'Deleting 250/1,000 · 480/s · 2s left'."""
        return f"{self.verb} {self.meter.counts()}"

    def finish(self) -> None:
        if self.shown_at is not None:
            self.stream.write(CLEAR)
            self.stream.flush()


def progress_line(verb: str, total: int, stream: TextIO, as_json: bool) -> ProgressLine | None:
    """A progress line on `stream` when it is a terminal and the output is not JSON."""
    if as_json or total == 0 or not stream.isatty():
        return None
    return ProgressLine(verb, total, stream)
