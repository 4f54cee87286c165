"""When a load that is still reading pages joins what it has so far for a view.

A partial snapshot re-joins every row its backend has so far, on the app's CPU, while the
pages still to come wait for that CPU. Joins nobody sees only delay the whole view: with a
partial every 0.25 s for each backend on its own, four backends of 25,000 reached the whole
view 1.25-1.47 times later than one backend of 100,000 (`benchmarks/bench_fleet.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

PARTIAL_EVERY = 0.25
"""Seconds between partial snapshots while pages arrive (each one re-joins every row)."""
WORTH_A_VIEW = 1.0
"""Seconds the rest of a list must be expected to take for a partial view after the first."""

Monotonic = Callable[[], float]


class PartialSpacing:
    """At most one partial snapshot every PARTIAL_EVERY seconds. The app's loads of several
    backends share one: its screen follows them all at most that often."""

    def __init__(self, monotonic: Monotonic = time.monotonic) -> None:
        self.monotonic = monotonic
        self.last: float | None = None

    def claim(self) -> bool:
        """Whether a partial may be made now; if so it counts as made now (two loads that
        ask together do not both make one)."""
        now = self.monotonic()
        if self.last is not None and now - self.last <= PARTIAL_EVERY:
            return False
        self.last = now
        return True


class PartialViews:
    """One load's partial snapshots. The first of all the loads sharing `spacing` (the first
    frame) is made at its first page, when more pages are to come. Any other only when its
    load's rows have doubled since its last (so the joins for views add up to less than the
    whole list's), the rest of its list is expected, at the rate so far, to take longer than
    WORTH_A_VIEW, and `spacing` says one may be made."""

    def __init__(self, spacing: PartialSpacing) -> None:
        self.spacing = spacing
        self.started = spacing.monotonic()
        self.received = 0
        """Checkpoints of this reading of the list (before any --project filter)."""
        self.joined = 0
        """Rows in the last partial snapshot."""

    def read_again(self) -> None:
        """The list changed and is read from the start: what came so far is dropped."""
        self.received = self.joined = 0

    def arrived(self, count: int) -> None:
        self.received += count

    def due(self, rows: int, total: int) -> bool:
        """Whether to join the `rows` so far for a view, of a list of `total`; if so, it
        counts as joined."""
        if self.received >= total:
            return False  # the whole list is in: its join follows at once
        if not self.received:
            return False  # empty pages so far (the list shrank, or says more than it has)
        if self.spacing.last is not None:  # the screen shows rows already
            elapsed = self.spacing.monotonic() - self.started
            left = (total - self.received) * elapsed / self.received
            if left < WORTH_A_VIEW or rows < 2 * self.joined:
                return False
        if not self.spacing.claim():
            return False
        self.joined = rows
        return True
