"""One updating line on the terminal while a bulk change or a download runs: done/total, rate,
time left.

Written to stderr only when stderr is a terminal (and not under --json), so a pipe or a log
file gets the outcome lines and nothing else. Updates are at most `INTERVAL` seconds apart
except the last (done == total), which is always written, then the line is cleared.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

INTERVAL = 0.1
CLEAR = "\r\x1b[2K"


def duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def count(number: int) -> str:
    return f"{number:,}"


class ProgressLine:
    """`update(done)` after each item; `finish()` clears the line.

    `amount` says how a number of items is shown (a count; bytes for a download), `already`
    is what was done before this run began (a resumed download's bytes: not in the rate), and
    `update`'s `note` is shown after the time left (e.g. "3/8 files")."""

    def __init__(
        self,
        verb: str,
        total: int,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        amount: Callable[[int], str] = count,
        already: int = 0,
    ) -> None:
        self.verb, self.total, self.stream, self.clock = verb, total, stream, clock
        self.amount, self.already = amount, already
        self.started = clock()
        self.shown_at: float | None = None
        self.done = already
        self.note = ""

    def update(self, done: int, note: str = "") -> None:
        self.done, self.note = done, note
        now = self.clock()
        if done < self.total and self.shown_at is not None and now - self.shown_at < INTERVAL:
            return
        self.shown_at = now
        self.stream.write(CLEAR + self.text(now))
        self.stream.flush()

    def text(self, now: float) -> str:
        """'Deleting 250/1,000 · 480/s · 2s left'."""
        line = f"{self.verb} {self.amount(self.done)}/{self.amount(self.total)}"
        elapsed, gained = now - self.started, self.done - self.already
        if gained > 0 and elapsed > 0:
            rate = gained / elapsed
            left = (self.total - self.done) / rate
            line = f"{line} · {self.amount(int(rate))}/s · {duration(left)} left"
        return f"{line} · {self.note}" if self.note else line

    def finish(self) -> None:
        if self.shown_at is not None:
            self.stream.write(CLEAR)
            self.stream.flush()


def progress_line(verb: str, total: int, stream: TextIO, as_json: bool) -> ProgressLine | None:
    """A progress line on `stream` when it is a terminal and the output is not JSON."""
    if as_json or total == 0 or not stream.isatty():
        return None
    return ProgressLine(verb, total, stream)
