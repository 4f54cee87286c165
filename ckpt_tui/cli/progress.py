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


class TerminalLine:
    """One line redrawn in place on a terminal: at most every `INTERVAL` seconds except the
    last, which always shows; `finish()` clears it. Prune's counts and a download's bytes
    both draw through it."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.clock = stream, clock
        self.shown_at: float | None = None

    def show(self, text: Callable[[], str], last: bool) -> None:
        now = self.clock()
        if not last and self.shown_at is not None and now - self.shown_at < INTERVAL:
            return
        self.shown_at = now
        self.stream.write(CLEAR + text())
        self.stream.flush()

    def finish(self) -> None:
        if self.shown_at is not None:
            self.stream.write(CLEAR)
            self.stream.flush()


class ProgressLine(TerminalLine):
    """`update(done)` after each item; `finish()` clears the line."""

    def __init__(
        self,
        verb: str,
        total: int,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(stream, clock)
        self.verb, self.total = verb, total
        self.meter = RateMeter(total, clock)

    @property
    def done(self) -> int:
        return self.meter.done

    def update(self, done: int) -> None:
        self.meter.update(done)
        self.show(self.text, done >= self.total)

    def text(self) -> str:
        """'Deleting 250/1,000 · 480/s · 2s left'."""
        return f"{self.verb} {self.meter.counts()}"


def progress_line(verb: str, total: int, stream: TextIO, as_json: bool) -> ProgressLine | None:
    """A progress line on `stream` when it is a terminal and the output is not JSON."""
    if as_json or total == 0 or not stream.isatty():
        return None
    return ProgressLine(verb, total, stream)
