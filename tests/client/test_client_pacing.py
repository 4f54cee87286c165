"""Bulk changes at each backend's pace, against real servers: back off on 429 and honour
`Retry-After`, slow down when the backend does, and never exceed the ceiling.

Latency is what the pace reads from its clock: here a `VirtualClock` the server advances, so
no outcome depends on how fast this machine is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from ckpt_tui.client import CheckpointClient, Endpoint, Outcome, Pace, RetryPolicy, run_bulk
from ckpt_tui.client.pacing import START, Sleep
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.clock import T0
from tests.support.faulty_app import FaultyApp, RecordedSleeps, VirtualClock
from tests.support.live_server import run_server
from tests.support.seed import seed_store

WAIT = 20.0
"""How long a test waits for a state it expects (it normally comes in milliseconds)."""


class GatedSleeps:
    """A sleep that records each delay and returns only once `release` is set."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.release = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await self.release.wait()


@pytest.fixture
def many(store: Store) -> list[str]:
    """300 checkpoints over 3 runs, as tinker paths."""
    return [f"tinker://{run}/{cid}" for run, cid in seed_store(store, runs=3, per_run=100)]


@pytest.fixture
def faulty(store: Store) -> FaultyApp:
    return FaultyApp(create_app(store, sweep_interval=None))


@asynccontextmanager
async def paced_client(
    faulty: FaultyApp, pace: Pace, sleep: Sleep
) -> AsyncIterator[CheckpointClient]:
    policy = RetryPolicy(max_attempts=4, sleep=sleep)
    with run_server(faulty) as url:
        async with CheckpointClient(Endpoint.remote(url), retry=policy, pace=pace) as client:
            yield client


async def delete_all(client: CheckpointClient, paths: list[str]) -> list[Outcome]:
    return await run_bulk(paths, client.delete_checkpoint, client.pace.ceiling)


def remaining(store: Store) -> int:
    return store.list_checkpoints(0, 1000)[1]


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(int(WAIT / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the expected state did not come")


async def test_429_with_retry_after_halves_the_pace_pauses_it_and_every_item_gets_done(
    faulty: FaultyApp, store: Store, many: list[str]
) -> None:
    faulty.gather(START, method="DELETE")  # the first START are seen at once ...
    faulty.fail_first(6, status=429, retry_after=2, method="DELETE")  # ... 6 of them refused
    sleeps = GatedSleeps()
    pace = Pace(32, clock=VirtualClock(), sleep=sleeps)
    async with paced_client(faulty, pace, sleeps) as client:
        run = asyncio.create_task(delete_all(client, many))
        # Paused: everything in flight was answered, and nothing new goes out meanwhile.
        await until(lambda: 2.0 in sleeps.delays and pace.in_flight == 0)
        sent_while_paused = faulty.count("DELETE")
        assert not run.done()
        assert sent_while_paused < len(many)
        assert pace.history[:2] == [(START // 2, "429"), (START // 2, "pause 2s")]
        sleeps.release.set()
        outcomes = await run
    # what the server saw: START at once before the 429s, at most half as many after the pause
    assert max(faulty.arrivals("DELETE")[:START]) == START
    after_pause = faulty.arrivals("DELETE")[sent_while_paused : sent_while_paused + START // 2]
    assert len(after_pause) == START // 2 and max(after_pause) <= START // 2
    assert all(outcome.ok for outcome in outcomes), [o.message for o in outcomes if not o.ok]
    assert remaining(store) == 0
    assert faulty.count("DELETE") == len(many) + 6  # each refused delete was sent once more
    assert set(sleeps.delays) == {2.0}  # the retries and the pause waited what the server said


async def test_a_backend_that_slows_down_midway_gets_fewer_at_once(
    faulty: FaultyApp, store: Store
) -> None:
    # enough that some are left for slower rounds, however far the client got before
    # the test saw the pace at its ceiling
    many = [f"tinker://{run}/{cid}" for run, cid in seed_store(store, runs=6, per_run=100)]
    clock = VirtualClock()
    pace = Pace(32, clock=clock, limit=8)  # below the ceiling, to grow
    async with paced_client(faulty, pace, RecordedSleeps()) as client:
        run = asyncio.create_task(delete_all(client, many))
        await until(lambda: pace.limit == 32)  # latency held: up to the ceiling ...
        faulty.gather(32, method="DELETE")  # ... and the server sees 32 at once
        await until(lambda: faulty.most_in_flight == 32)
        faulty.slow_after(faulty.count("DELETE"), clock, method="DELETE")  # now it slows down
        await until(lambda: pace.limit < 32)
        # Requests the client let out under the old limit may reach the server after the
        # fall; once no more than 24 are out, every later arrival was let out under it.
        await until(lambda: pace.in_flight <= 24)
        since_slower = len(faulty.arrivals("DELETE"))
        outcomes = await run
    assert all(outcome.ok for outcome in outcomes)
    assert remaining(store) == 0
    grown = [limit for limit, why in pace.history if why == "latency holds"]
    assert grown == [16, 32]
    # Once it slowed down: a quarter less a round, and never more again. How far it falls
    # is not the test's to say: after the first slower rounds, rounds compare with slow
    # rounds, whose rates (about one answer a virtual second whatever the limit) vary with how
    # arrivals and answers interleave, so a round may hold its limit or fall once more.
    first_slower = next(i for i, (_, why) in enumerate(pace.history) if why == "slower")
    since = [limit for limit, _ in pace.history[first_slower:]]
    assert since[0] == 24 and since == sorted(since, reverse=True), pace.history
    # what the server saw: never more than 24 at once once those let out before are in
    assert len(faulty.arrivals("DELETE")) > since_slower
    assert max(faulty.arrivals("DELETE")[since_slower:]) <= 24
    assert faulty.most_in_flight == 32


async def test_the_ceiling_is_never_exceeded(
    faulty: FaultyApp, store: Store, many: list[str]
) -> None:
    faulty.gather(5, method="DELETE")  # the first 5 wait for each other: a pile-up
    pace = Pace(5, clock=VirtualClock())  # latency always holds: it would grow if it could
    async with paced_client(faulty, pace, RecordedSleeps()) as client:
        outcomes = await delete_all(client, many)
    assert all(outcome.ok for outcome in outcomes)
    assert remaining(store) == 0
    assert pace.history == []
    assert faulty.most_in_flight == 5


async def test_backends_side_by_side_each_keep_their_own_pace(tmp_path: Path) -> None:
    root = tmp_path
    with (
        Store.open(root / "a", FixedClock(T0)) as busy_store,
        Store.open(root / "b", FixedClock(T0)) as calm_store,
    ):
        busy_paths = [f"tinker://{r}/{c}" for r, c in seed_store(busy_store, 2, 50)]
        calm_paths = [f"tinker://{r}/{c}" for r, c in seed_store(calm_store, 2, 50)]
        busy = FaultyApp(create_app(busy_store, sweep_interval=None))
        calm = FaultyApp(create_app(calm_store, sweep_interval=None))
        busy.fail_first(3, status=503, method="DELETE")
        busy_pace, calm_pace = Pace(32, clock=VirtualClock()), Pace(32, clock=VirtualClock())
        async with (
            paced_client(busy, busy_pace, RecordedSleeps()) as one,
            paced_client(calm, calm_pace, RecordedSleeps()) as other,
        ):
            done = await asyncio.gather(delete_all(one, busy_paths), delete_all(other, calm_paths))
        assert all(o.ok for outcomes in done for o in outcomes)
        assert remaining(busy_store) == remaining(calm_store) == 0
    assert busy_pace.history[0] == (START // 2, "503")
    assert all(why == "latency holds" for _, why in calm_pace.history)
    assert calm_pace.limit == 32
    assert busy.most_in_flight <= 32 and calm.most_in_flight <= 32
    # the busy one's first answers were the 503s: the requests that followed them came at
    # most half the start at once, while the calm one was not held to that
    after_503 = busy.arrivals("DELETE")[3:]
    assert max(after_503[: START // 2]) <= START // 2
