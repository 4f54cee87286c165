"""Whole lists: concurrent pages, server order, no duplicates, progress."""

from __future__ import annotations

from operator import attrgetter

import pytest

from ckpt_tui.api_types import Checkpoint
from ckpt_tui.client import CheckpointClient
from ckpt_tui.client.paging import Page, read_whole
from ckpt_tui.store import Store
from tests.support.seed import seed_store

PAGE = 40


@pytest.fixture
def seeded(store: Store) -> list[str]:
    """250 checkpoints over 5 runs; their tinker paths, newest first (the server's order)."""
    pairs = seed_store(store, runs=5, per_run=50)
    return [f"tinker://{run}/{cid}" for run, cid in reversed(pairs)]


async def test_all_checkpoints_in_order_without_duplicates(
    client: CheckpointClient, seeded: list[str]
) -> None:
    progress: list[tuple[int, int]] = []
    listed = await client.list_all_checkpoints(
        page_size=PAGE,
        concurrency=3,
        on_progress=lambda done, total: progress.append((done, total)),
    )
    assert [c.tinker_path for c in listed] == seeded
    assert len(progress) == 7  # ceil(250 / 40) pages
    assert progress[0] == (PAGE, 250)
    assert progress[-1] == (250, 250)
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)


async def test_pages_arrive_with_their_offsets(client: CheckpointClient, seeded: list[str]) -> None:
    pages = [page async for page in client.iter_checkpoint_pages(page_size=PAGE)]
    assert pages[0].offset == 0
    assert sorted(page.offset for page in pages) == list(range(0, 250, PAGE))
    for page in pages:
        assert [c.tinker_path for c in page.items] == seeded[page.offset : page.offset + PAGE]


async def test_a_list_that_grew_while_read_is_read_again_whole(
    client: CheckpointClient, store: Store, seeded: list[str]
) -> None:
    added: list[bool] = []

    def add_newest_after_first_page(done: int, total: int) -> None:
        # A new checkpoint lands at the front: every later page is shifted by one.
        if not added:
            store.add_checkpoint("run-000", "weights/9999", {"adapter.bin": b"x"})
            added.append(True)

    listed = await client.list_all_checkpoints(
        page_size=PAGE, on_progress=add_newest_after_first_page
    )
    paths = [c.tinker_path for c in listed]
    assert paths == ["tinker://run-000/weights/9999", *seeded]  # the second read, whole


async def test_all_training_runs(client: CheckpointClient, seeded: list[str]) -> None:
    one_page = await client.list_training_runs(limit=100)
    every = await client.list_all_training_runs(page_size=2, concurrency=2)
    assert [run.training_run_id for run in every] == [run.training_run_id for run in one_page.items]
    assert len(every) == 5


async def test_empty_store_lists_nothing(client: CheckpointClient) -> None:
    progress: list[tuple[int, int]] = []
    listed = await client.list_all_checkpoints(
        page_size=PAGE, on_progress=lambda done, total: progress.append((done, total))
    )
    assert listed == []
    assert progress == [(0, 0)]


async def test_bad_page_size_is_refused(client: CheckpointClient) -> None:
    with pytest.raises(ValueError, match="page_size"):
        await client.list_all_checkpoints(page_size=0)


async def test_big_pages_are_asked_for_fewer_at_a_time(
    client: CheckpointClient, seeded: list[str]
) -> None:
    """With `items_in_flight`, page bytes held at once stay bounded whatever the page size."""
    in_flight = most = 0

    async def fetch(limit: int, offset: int) -> Page[Checkpoint]:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            return await client.list_checkpoints(limit, offset)
        finally:
            in_flight -= 1

    key = attrgetter("tinker_path")
    listing = await read_whole(fetch, key, page_size=10, concurrency=16, items_in_flight=30)
    assert listing.complete and [c.tinker_path for c in listing.items] == seeded
    assert 1 <= most <= 3


async def test_known_checkpoints_are_swapped_in_as_each_page_arrives(
    client: CheckpointClient, seeded: list[str]
) -> None:
    """A refresh then holds one copy of each unchanged checkpoint, not a page's worth more."""
    first = await client.read_all_checkpoints(page_size=PAGE)
    held = {ckpt.tinker_path: ckpt for ckpt in first.items[::2]}
    pages: list[Page[Checkpoint]] = []

    async def arrived(page: Page[Checkpoint]) -> None:
        pages.append(page)

    def known(items: list[Checkpoint]) -> list[Checkpoint]:
        return [held.get(ckpt.tinker_path, ckpt) for ckpt in items]

    again = await client.read_all_checkpoints(page_size=PAGE, on_page=arrived, known=known)
    arrived_items = [ckpt for page in pages for ckpt in page.items]
    assert sorted(c.tinker_path for c in arrived_items) == sorted(seeded)
    for items in (arrived_items, again.items):
        assert [c is held.get(c.tinker_path) for c in items] == [p in held for p in seeded]
