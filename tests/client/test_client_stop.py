"""Stopping a bulk run against a real server: what was sent finishes, nothing new is sent,
and each item's outcome says whether it was done, failed or not tried."""

from __future__ import annotations

import asyncio

from ckpt_tui.client import (
    CheckpointClient,
    Endpoint,
    Outcome,
    Pace,
    RetryPolicy,
    Stop,
    run_bulk,
)
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp, RecordedSleeps
from tests.support.live_server import run_server
from tests.support.waiting import until


def live_paths(store: Store) -> set[str]:
    return {c.tinker_path for c in store.list_checkpoints(0, 1000)[0]}


async def stopped_delete(
    faulty: FaultyApp, made: list[str], concurrency: int, pace: Pace
) -> list[Outcome]:
    """Delete `made`; once the first `pace.ceiling` deletes are held at the server, stop the
    run and let them through."""
    gate = faulty.hold(method="DELETE")
    stop = Stop()
    policy = RetryPolicy(max_attempts=2, sleep=RecordedSleeps())
    with run_server(faulty) as url:
        async with CheckpointClient(Endpoint.remote(url), retry=policy, pace=pace) as client:
            run = asyncio.ensure_future(
                run_bulk(made, client.delete_checkpoint, concurrency, stop=stop)
            )
            try:
                await until(lambda: faulty.in_flight == pace.ceiling)
                stop.request()
            finally:
                gate.set()
            return await run


async def test_a_stopped_run_finishes_what_was_sent_and_sends_nothing_more(
    faulty: FaultyApp, store: Store, made: list[str]
) -> None:
    outcomes = await stopped_delete(faulty, made, concurrency=3, pace=Pace(ceiling=3))
    done = [o.target for o in outcomes if o.ok]
    not_tried = [o.target for o in outcomes if not o.tried]
    assert len(done) == 3 and faulty.count("DELETE") == 3
    assert sorted(not_tried) == sorted(set(made) - set(done))
    assert all(not o.ok and "not tried" in o.message for o in outcomes if not o.tried)
    assert live_paths(store) == set(not_tried)  # exactly the done ones are gone


async def test_changes_queued_at_the_backends_pace_are_not_sent_after_a_stop(
    faulty: FaultyApp, store: Store, made: list[str]
) -> None:
    # Every item is a worker, but the pace lets 2 through: 10 wait for a slot when the
    # user stops, and none of them may go out once a slot frees.
    outcomes = await stopped_delete(faulty, made, concurrency=len(made), pace=Pace(ceiling=2))
    assert faulty.count("DELETE") == 2
    assert sum(o.ok for o in outcomes) == 2
    assert sum(not o.tried for o in outcomes) == len(made) - 2
    assert len(live_paths(store)) == len(made) - 2


async def test_a_run_not_stopped_reports_every_item_tried(
    faulty: FaultyApp, store: Store, made: list[str]
) -> None:
    faulty.fail_names({"0001"})
    policy = RetryPolicy(max_attempts=1, sleep=RecordedSleeps())
    with run_server(faulty) as url:
        async with CheckpointClient(Endpoint.remote(url), retry=policy) as client:
            outcomes = await run_bulk(made, client.delete_checkpoint, 4, stop=Stop())
    assert all(o.tried for o in outcomes)
    assert sum(not o.ok for o in outcomes) == 3
    assert live_paths(store) == {o.target for o in outcomes if not o.ok}
