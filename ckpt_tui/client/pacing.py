"""How many changes one backend gets at once: adapted to what it sustains, never above a ceiling.

Each client (one per backend) has its own `Pace`, so several backends run side by side, each
at its own pace. Every attempt of a change takes a slot; the limit on slots

- starts moderate (`START`, or the ceiling if lower),
- grows while latency holds: until the first sign of trouble, by one slot for each answer
  within `SLOWER` times the fastest seen (plus `SLACK`), so the limit doubles over a round
  (as many answers as the limit at its start) as the answers come, as TCP's slow start
  does, and the round's first slower answer ends its growth (as TCP's HyStart); then,
  after a round whose median latency holds, by a quarter (one slot a round, after a noisy
  first round, took 2.5 s of a 6 s prune of 1,000 to go from 6 to 32);
- after a round whose latency did not hold (judged at the limit it reached: its answers
  came with that many in flight): stays while the round's rate (its answers over
  the time it took) is within `RATE_HOLDS` of the last rounds', and grows by a quarter when a
  higher limit raised it by `RATE_RISES`, so a backend that gets more done with more at once
  is not held back by a busy machine's noise; else falls by a quarter (the backend slowed
  down, or more in flight only queued);
- halves on 429 or 503 (once per round: the other answers of that round were sent at the
  old limit), and with `Retry-After`, no new attempt starts until that many seconds passed;
- never exceeds `ceiling` (the config file's `max_in_flight`) nor falls below 1.

The clock and the sleep are injectable, so tests decide what latency the pace sees.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

DEFAULT_MAX_IN_FLIGHT = 128
"""The ceiling when the config file sets none: four times what the official CLI sends at once
(32 threads), so a backend that sustains more gets more; the pace finds how many it does.
Through 50 ms of latency a backend that deletes 1,000-2,000 a second needs 50-100 in flight
(Little's law): at a ceiling of 64 the pace sat at the ceiling, and `prune --yes` deleted
10,000 at 754 and 804/s against 1,046 and 905/s at 128, 1,000 at 432 and 474/s against 582
and 635/s (`benchmarks/bench_delete.py --large`, turn about, load 5-6)."""
START = 32
"""The first limit: what the official CLI sends to every backend from its first request (32
threads). Against 8, `prune --yes` of 1,000 through 50 ms of latency (benchmarks/bench_delete.py,
12 runs of each turn about) deleted at 809/s against 755/s in its deleting part (medians), and
reached 75% of `serve` alone's rate in 7 runs of 12 against 2: from 8, two rounds of doubling
went before the pace had as many out as 32 (each round waits for as many answers as its limit)."""
SLOWER = 2.0
SLACK = 0.05
"""Seconds a round's median may exceed twice the fastest answer and still count as holding:
an in-process store answers in a millisecond, where a few ms of scheduling noise is not load."""
RATE_HOLDS = 0.8
"""A round whose latency did not hold still keeps its limit while its rate (in flight over
latency) is at least this share of the median rate of the last `RATE_ROUNDS` rounds."""
RATE_ROUNDS = 3
RATE_RISES = 1.1
"""...and grows by a quarter when a higher limit got a rate this much above theirs."""
QUICKEST = 0.001
"""Seconds: a round's median latency counts as at least this (a rate needs a divisor)."""
MAX_PAUSE = 30.0
"""The longest `Retry-After` pause honoured (as `RetryPolicy.max_retry_after`)."""

Sleep = Callable[[float], Awaitable[None]]


@dataclass
class Slot:
    """One attempt in flight: when it started and at which round of the pace."""

    started: float
    round: int
    status: int | None = None
    retry_after: float | None = None

    def answered(self, status: int | None, retry_after: float | None = None) -> None:
        """What the attempt got back (None: no answer, e.g. the connection failed)."""
        self.status, self.retry_after = status, retry_after


@dataclass
class Pace:
    """The adaptive limit of one backend; `history` records where each round (or pause)
    left `limit`, when it changed over the round, and why."""

    ceiling: int = DEFAULT_MAX_IN_FLIGHT
    clock: Callable[[], float] = time.monotonic
    sleep: Sleep = asyncio.sleep
    limit: int = 0
    in_flight: int = 0
    history: list[tuple[int, str]] = field(default_factory=list)
    _fastest: float | None = None
    _rates: list[float] = field(default_factory=list)
    _last_limit: int = 0
    _round_started: float = 0.0
    _round_limit: int = 0
    """The limit the round started at: as many answers end it."""
    _adding: bool = True
    """Whether this round's answers that hold still add a slot (while growing fast, until
    its first slower answer)."""
    _latencies: list[float] = field(default_factory=list)
    _round: int = 0
    _growing_fast: bool = True
    _changed: asyncio.Condition | None = None
    _resume: asyncio.Event | None = None
    _pausing: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        if self.ceiling < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {self.ceiling}")
        self.limit = self._round_limit = self.limit or min(START, self.ceiling)
        self._round_started = self.clock()

    @property
    def condition(self) -> asyncio.Condition:
        # made on first use: a pace may be built outside the event loop that uses it
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """Wait for a free slot (and any `Retry-After` pause); hold it during one attempt."""
        async with self.condition:
            while True:
                if self._resume is not None and not self._resume.is_set():
                    resume = self._resume
                    self.condition.release()
                    try:
                        await resume.wait()
                    finally:
                        await self.condition.acquire()
                    continue
                if self.in_flight < self.limit:
                    break
                await self.condition.wait()
            self.in_flight += 1
        taken = Slot(self.clock(), self._round)
        try:
            yield taken
        finally:
            async with self.condition:
                self.in_flight -= 1
                self._learn(taken)
                # only as many as may start now: waking every waiter at each answer costs
                # a wake-up per waiter per answer
                self.condition.notify(max(0, self.limit - self.in_flight))

    def _learn(self, taken: Slot) -> None:
        if taken.status in (429, 503):
            self._back_off(taken)
        elif taken.status is not None and taken.status < 500:
            self._answered_in(self.clock() - taken.started)

    def _back_off(self, taken: Slot) -> None:
        # Halved once per round: the others of that round were sent before the change.
        if taken.round == self._round:
            self._growing_fast = False
            self._set(max(1, self.limit // 2), f"{taken.status}")
        if taken.retry_after is not None and taken.retry_after > 0:
            self._pause(min(taken.retry_after, MAX_PAUSE))

    def _pause(self, seconds: float) -> None:
        if self._resume is not None and not self._resume.is_set():
            return
        resume = self._resume = asyncio.Event()

        async def wait_then_resume() -> None:
            try:
                await self.sleep(seconds)
            finally:
                resume.set()

        task = asyncio.get_running_loop().create_task(wait_then_resume())
        self._pausing = task  # a reference, so the task is not collected before it ends
        self.history.append((self.limit, f"pause {seconds:g}s"))

    def _answered_in(self, latency: float) -> None:
        if self._fastest is None or latency < self._fastest:
            self._fastest = latency
        self._latencies.append(latency)
        holds = self._fastest * SLOWER + SLACK
        if self._growing_fast and self._adding:
            # One more for each answer that held: waiting for the round's last answer to
            # double left the slots of its first ones idle for most of a round trip. The
            # first slower answer stops it: more in flight would only queue.
            self._adding = latency <= holds
            if self._adding and self.limit < self.ceiling:
                self.limit += 1
        if len(self._latencies) < self._round_limit:
            return
        median = statistics.median(self._latencies)
        # what this round got done per second: its answers over the time it took
        rate = len(self._latencies) / max(self.clock() - self._round_started, QUICKEST)
        # the reference: the median of the last few rounds' rates (one lucky round is no bar)
        best = statistics.median(self._rates) if self._rates else None
        self._rates = [*self._rates[-(RATE_ROUNDS - 1) :], rate]
        # more in flight than the round before: did it buy more done per second?
        grew, self._last_limit = self.limit > self._last_limit, self.limit
        if median <= holds:
            grown = self.limit if self._growing_fast else self.limit + self._quarter
            self._set(min(self.ceiling, grown), "latency holds")
        elif best is not None and rate >= best * RATE_HOLDS:
            # Slower answers, but as many or more done per second: a backend that does more
            # per request when more come at once (or a busy machine's noise), not one
            # queueing them. Keep the limit; a quarter more while raising it still raises
            # the rate.
            self._growing_fast = False
            if grew and rate > best * RATE_RISES:
                self._set(min(self.ceiling, self.limit + self._quarter), "rate rises")
            else:
                self._set(self.limit, "rate holds")
        else:
            self._growing_fast = False
            self._set(max(1, self.limit * 3 // 4), "slower")

    @property
    def _quarter(self) -> int:
        return max(1, self.limit // 4)

    def _set(self, limit: int, why: str) -> None:
        """A new limit starts a new round (the latencies of the old one no longer apply)."""
        self._latencies.clear()
        self._round += 1
        self._round_started = self.clock()
        self._adding = True
        if limit != self._round_limit:
            self.history.append((limit, why))
        self.limit = self._round_limit = limit
