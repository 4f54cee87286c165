"""How the garbage collector treats 100,000-row snapshots, so it never stalls the screen.

A snapshot of 100,000 checkpoints is about 300,000 objects the cyclic garbage collector
tracks. Python's collector runs a full pass each time the tracked heap grew by a quarter:
measured in `benchmarks/bench_tui.py`, 12 full passes of up to 440 ms each over one run,
some of them inside key presses. Three measures stop that:

- `collector_paused()` switches automatic collection off while a snapshot is joined (a join
  makes long-lived rows, not garbage; reference counting frees the rest meanwhile);
- `keep_long_lived()`, once a snapshot is joined and again once it is sorted, moves every
  object alive at that moment out of the collector's sight (`gc.freeze`), so later passes
  only walk new objects;
- young collections run after 10,000 allocations instead of 700 (YOUNG_THRESHOLD).

Fetching is not paused: each HTTP request leaves a little cyclic garbage, which young
collections free cheaply (paused, then frozen, a 100,000-row refresh left 25 MB behind).
Frozen objects are still freed when their last reference goes; only a reference cycle among
them that becomes garbage would stay, such as a worker that was running at the freeze, with
its arguments. So workers take no big arguments, and at most every COLLECT_EVERY seconds,
when the user is idle, `collect_if_due()` undoes the freeze and runs a full pass, which
bounds that memory. The app opts in
with `manage_heap()`; library callers and tests keep Python's default behaviour.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

COLLECT_EVERY = 600.0
"""Seconds between full collections while the heap is managed."""
YOUNG_THRESHOLD = 10_000
"""Allocations between young collections (Python's default is 700). Each young collection
walks every 100,000-item list a key press has just made (a filtered view, the table's rows):
at 700, a filter key press paid for several such walks, 10-60 ms in all."""


class _HeapPolicy:
    """The process-wide state behind the module's functions (the collector is global)."""

    def __init__(self) -> None:
        self.managed = False
        self.lock = threading.Lock()
        self.pauses = 0
        self.resume_enabled = True
        self.last_full = time.monotonic()
        self.default_thresholds = gc.get_threshold()


_policy = _HeapPolicy()


def manage_heap(enabled: bool = True) -> None:
    """Turn the policy on (the app does, at start) or off."""
    if enabled and not _policy.managed:
        _policy.default_thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, *_policy.default_thresholds[1:])
    elif not enabled and _policy.managed:
        gc.set_threshold(*_policy.default_thresholds)
    _policy.managed = enabled
    _policy.last_full = time.monotonic()


def is_managed() -> bool:
    return _policy.managed


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside this block (nests, and is safe across threads)."""
    if not _policy.managed:
        yield
        return
    with _policy.lock:
        if _policy.pauses == 0:
            _policy.resume_enabled = gc.isenabled()
            gc.disable()
        _policy.pauses += 1
    try:
        yield
    finally:
        with _policy.lock:
            _policy.pauses -= 1
            if _policy.pauses == 0 and _policy.resume_enabled:
                gc.enable()


def keep_long_lived() -> None:
    """Treat everything alive now as long-lived: later collections will not walk it."""
    if _policy.managed:
        gc.freeze()


def collect_young() -> None:
    """Collect the young generations now (a few milliseconds), e.g. before a freeze."""
    if _policy.managed:
        gc.collect(1)


def collect_if_due(idle: bool) -> bool:
    """Every COLLECT_EVERY seconds at most, and only when `idle` (no recent key press or
    click): undo the freeze, run a full collection (0.65 s at 100,000 rows), freeze again.

    True if it ran. The app calls it from a timer.
    """
    now = time.monotonic()
    if not (_policy.managed and idle and now - _policy.last_full >= COLLECT_EVERY):
        return False
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _policy.last_full = now
    return True


class Graveyard:
    """Big structures to free later, in a worker thread, instead of inside a frame.

    Freeing a replaced 100,000-row snapshot takes 50-250 ms (every row, dict and tuple is
    released one by one), and it would otherwise happen on the UI thread the moment the
    new snapshot takes its place.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[object] = []

    def retire(self, item: object) -> None:
        """Keep `item` alive until the next `bury()`."""
        with self._lock:
            self._items.append(item)

    def bury(self) -> int:
        """Free everything retired so far (call it from a worker thread); how many items."""
        with self._lock:
            items, self._items = self._items, []
        count = len(items)
        items.clear()
        return count
