"""Concurrent changes to one checkpoint: exactly one wins."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx

from ckpt_tui.store import Store
from tests.support.seed import seed_store

URL = "/api/v1/training_runs/run-000/checkpoints/weights/0000"


async def test_twenty_concurrent_deletes(server_url: str, store: Store) -> None:
    seed_store(store, runs=1, per_run=2)
    async with httpx.AsyncClient(base_url=server_url) as client:
        answers = await asyncio.gather(*(client.delete(URL) for _ in range(20)))
    assert Counter(a.status_code for a in answers) == {204: 1, 404: 19}
    assert [c.checkpoint_id for c in store.list_run_checkpoints("run-000")] == ["weights/0001"]
    store.wait_for_purges()  # a delete answers once committed; its files go right after
    assert len(list(store.root.rglob("adapter.bin"))) == 1  # the files went too


async def test_twenty_concurrent_publishes(server_url: str, store: Store) -> None:
    seed_store(store, runs=1, per_run=1)
    async with httpx.AsyncClient(base_url=server_url) as client:
        answers = await asyncio.gather(*(client.post(f"{URL}/publish") for _ in range(20)))
    assert Counter(a.status_code for a in answers) == {204: 1, 409: 19}
    assert store.get_checkpoint("run-000", "weights/0000").public is True
