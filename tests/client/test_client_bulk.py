"""Bulk operations: bounded, ordered, one outcome per item, never stopping at a failure."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from ckpt_tui.client import (
    CheckpointClient,
    CheckpointRef,
    Endpoint,
    Outcome,
    RetryPolicy,
    run_bulk,
)
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.timekeeping.ttl import extend
from tests.support.faulty_app import FaultyApp, RecordedSleeps
from tests.support.live_server import run_server


@pytest.fixture
async def client(faulty: FaultyApp) -> AsyncIterator[CheckpointClient]:
    policy = RetryPolicy(max_attempts=2, sleep=RecordedSleeps())
    with run_server(faulty) as url:
        async with CheckpointClient(Endpoint.remote(url), retry=policy) as opened:
            yield opened


def live_paths(store: Store) -> list[str]:
    return [c.tinker_path for c in store.list_checkpoints(0, 1000)[0]]


def ids(path: str) -> tuple[str, str]:
    run_id, checkpoint_id = path.removeprefix("tinker://").split("/", 1)
    return run_id, checkpoint_id


async def test_bulk_delete_with_some_failures(
    client: CheckpointClient, faulty: FaultyApp, store: Store, made: list[str]
) -> None:
    faulty.fail_names({"0001"})  # one checkpoint in each of the 3 runs always fails
    progress: list[tuple[int, int, Outcome]] = []
    outcomes = await run_bulk(
        made,
        client.delete_checkpoint,
        concurrency=4,
        on_progress=lambda d, t, o: progress.append((d, t, o)),
    )
    assert [o.target for o in outcomes] == made
    failed = [o.target for o in outcomes if not o.ok]
    assert failed == [p for p in made if p.endswith("/0001")]
    assert len(failed) == 3
    for outcome in outcomes:
        if not outcome.ok:
            assert outcome.status == 500
            assert "injected failure for checkpoint 0001" in outcome.message
    assert sorted(live_paths(store)) == sorted(failed)
    assert [d for d, _, _ in progress] == list(range(1, len(made) + 1))
    assert {t for _, t, _ in progress} == {len(made)}


async def test_bad_refs_become_outcomes_not_exceptions(
    client: CheckpointClient, store: Store, made: list[str]
) -> None:
    refs: list[CheckpointRef] = [made[0], "not-a-path", made[1], "tinker://run-000/weights/none"]
    outcomes = await run_bulk(refs, client.publish)
    assert [o.ok for o in outcomes] == [True, False, True, False]
    assert "tinker://" in outcomes[1].message
    assert outcomes[3].status == 404
    assert store.get_checkpoint(*ids(made[1])).public is True


async def test_bulk_unpublish_reports_conflicts(
    client: CheckpointClient, store: Store, made: list[str]
) -> None:
    store.set_public(*ids(made[0]), True)
    outcomes = await run_bulk(made[:2], client.unpublish)
    assert outcomes[0].ok
    assert outcomes[1].status == 409
    assert store.get_checkpoint(*ids(made[0])).public is False


async def test_bulk_extend_ttl_per_checkpoint(
    client: CheckpointClient, store: Store, clock: FixedClock, made: list[str]
) -> None:
    """Extending pushes an expiry later; a checkpoint that never expires stays so."""
    store.set_ttl(*ids(made[0]), 3 * 3600)
    checkpoints = {c.tinker_path: c for c in (store.get_checkpoint(*ids(p)) for p in made[:2])}
    week = 7 * 86400

    async def extend_one(path: str) -> None:
        ttl = extend(checkpoints[path].expires_at, week, clock.now())
        await client.set_ttl(path, ttl.seconds)

    outcomes = await run_bulk(made[:2], extend_one)
    assert all(o.ok for o in outcomes)
    first, second = (store.get_checkpoint(*ids(p)) for p in made[:2])
    assert first.expires_at == clock.now() + timedelta(hours=3, days=7)
    assert second.expires_at is None  # it never expired: extending keeps it so


async def test_bulk_set_one_ttl_and_clear(
    client: CheckpointClient, store: Store, made: list[str]
) -> None:
    assert all(o.ok for o in await run_bulk(made, lambda p: client.set_ttl(p, 7200)))
    assert all(store.get_checkpoint(*ids(p)).expires_at for p in made)
    assert all(o.ok for o in await run_bulk(made, lambda p: client.set_ttl(p, None)))
    assert not any(store.get_checkpoint(*ids(p)).expires_at for p in made)


async def test_empty_bulk_is_empty(client: CheckpointClient) -> None:
    assert await run_bulk([], client.delete_checkpoint) == []


async def test_a_large_bulk_runs_only_as_many_tasks_as_it_sends_at_once() -> None:
    """A task per item made all of them at once: 100,000 items took 202 MiB that way."""
    before = len(asyncio.all_tasks())
    running = most_running = most_tasks = 0

    async def one(item: int) -> None:
        nonlocal running, most_running, most_tasks
        running += 1
        most_running = max(most_running, running)
        most_tasks = max(most_tasks, len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        running -= 1

    items = list(range(5000))
    outcomes = await run_bulk(items, one, concurrency=8)
    assert [o.target for o in outcomes] == [str(item) for item in items]
    assert all(o.ok for o in outcomes)
    assert most_running == 8
    assert most_tasks == before + 8
