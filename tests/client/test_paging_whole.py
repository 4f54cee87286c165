"""Never a partial list taken for the whole: against a real server behind a real ASGI app that
caps pages, fails a page, and shifts items between pages while the list is read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ckpt_tui.cli import main
from ckpt_tui.client import CheckpointClient, Endpoint, IncompleteListError, RetryPolicy, paging
from ckpt_tui.client.client import PAGE_CONCURRENCY
from ckpt_tui.client.paging import MAX_READS
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.demo_fixture import ServedDemo, served_demo
from tests.support.faulty_app import RecordedSleeps
from tests.support.live_server import run_server
from tests.support.paging_faults import PagingFaults
from tests.support.seed import seed_store
from tests.support.tui import make_app, screen_of, settle

COUNT = 600


def stored_paths(store: Store) -> list[str]:
    return [c.tinker_path for c in store.list_checkpoints(0, 100_000)[0]]


@pytest.fixture
def proxy(store: Store) -> PagingFaults:
    seed_store(store, runs=4, per_run=COUNT // 4)
    return PagingFaults(create_app(store, sweep_interval=None), cap=37)


@pytest.fixture
def proxy_url(proxy: PagingFaults) -> Iterator[str]:
    with run_server(proxy) as url:
        yield url


@pytest.fixture
async def client(proxy_url: str) -> AsyncIterator[CheckpointClient]:
    policy = RetryPolicy(sleep=RecordedSleeps())
    async with CheckpointClient(Endpoint.remote(proxy_url), retry=policy) as opened:
        yield opened


async def test_capped_pages_are_all_fetched(
    client: CheckpointClient, proxy: PagingFaults, store: Store
) -> None:
    listing = await client.read_all_checkpoints(page_size=1000)
    assert listing.complete
    assert [c.tinker_path for c in listing.items] == stored_paths(store)
    # the gaps after the first capped page are asked for together, not one after another
    assert len(proxy.pages) == -(-COUNT // 37)
    runs = await client.list_all_training_runs(page_size=100)
    assert len(runs) == 4


async def test_a_page_failing_once_is_fetched_again(
    client: CheckpointClient, proxy: PagingFaults, store: Store
) -> None:
    proxy.fail_offsets({37 * 5}, times=1)
    listing = await client.read_all_checkpoints(page_size=1000)
    assert listing.complete and len(listing.items) == COUNT


async def test_a_page_that_keeps_failing_leaves_the_list_incomplete(
    client: CheckpointClient, proxy: PagingFaults
) -> None:
    proxy.fail_offsets({37 * 5})
    listing = await client.read_all_checkpoints(page_size=1000)
    assert not listing.complete
    assert "could not be read" in listing.problem and "offset 185" in listing.problem
    assert len(listing.items) == COUNT - 37
    with pytest.raises(IncompleteListError, match="incomplete"):
        await client.list_all_checkpoints(page_size=1000)


async def test_items_shifting_up_mid_read_are_read_again(
    client: CheckpointClient, proxy: PagingFaults, store: Store
) -> None:
    """A delete after the first page moves every later item up by one: read once, the item at
    each page's edge would be skipped without a word."""
    deleted: list[str] = []

    def delete_one(offset: int) -> None:
        if offset > 0 and not deleted:
            newest = store.list_checkpoints(0, 1)[0][0]
            store.delete_checkpoint(newest.run_id, newest.checkpoint_id)
            deleted.append(newest.tinker_path)

    proxy.before_page = delete_one
    listing = await client.read_all_checkpoints(page_size=1000)
    assert listing.complete
    assert [c.tinker_path for c in listing.items] == stored_paths(store)
    assert len(listing.items) == COUNT - 1 and deleted[0] not in stored_paths(store)


async def test_a_list_that_never_holds_still_is_incomplete(
    client: CheckpointClient, proxy: PagingFaults, store: Store
) -> None:
    added: list[int] = []

    def add_one(offset: int) -> None:
        if offset > 0:
            added.append(offset)
            store.add_checkpoint("run-000", f"weights/9{len(added):04d}", {"a.bin": b"x"})

    proxy.before_page = add_one
    listing = await client.read_all_checkpoints(page_size=1000)
    assert not listing.complete
    assert "changed while it was read" in listing.problem


CLAIMED = 10**12
PAGES, WINDOW = -(-COUNT // 37), PAGE_CONCURRENCY


def most_requests(attempts: int = 1) -> int:
    """What a read of a list that claims more than its pages hold may ask, at most, MAX_READS
    times: the first page; the pages that hold items; as many past the end as results come
    back before an empty page (or a window of failures in a row) stops the round, plus the
    window then in flight; a window in the next round; each up to `attempts` times."""
    return MAX_READS * (1 + PAGES + (PAGES + 2 * WINDOW) * attempts)


async def test_a_claimed_total_the_pages_do_not_bear_out_is_bounded_work(
    client: CheckpointClient, proxy: PagingFaults, store: Store
) -> None:
    """A server claiming 10**12 checkpoints once made a coroutine per page up to the claim
    (MemoryError after 37 s): now a window of pages is asked for, and the empty pages below
    the claimed total end the read as an incomplete list that says why."""
    proxy.claimed_total = CLAIMED
    listing = await asyncio.wait_for(client.read_all_checkpoints(page_size=1000), 300)
    assert not listing.complete
    assert f"listed {CLAIMED:,} items but served fewer" in listing.problem
    assert [c.tinker_path for c in listing.items] == stored_paths(store)
    assert len(proxy.pages) <= most_requests()


async def test_a_claimed_total_whose_pages_all_fail_is_bounded_work(
    client: CheckpointClient, proxy: PagingFaults
) -> None:
    proxy.claimed_total = CLAIMED
    proxy.fail_from = COUNT
    listing = await asyncio.wait_for(client.read_all_checkpoints(page_size=1000), 300)
    assert not listing.complete and "could not be read" in listing.problem
    assert len(listing.items) == COUNT
    assert len(proxy.pages) <= most_requests(RetryPolicy().max_attempts)


@pytest.mark.usefixtures("quiet_environment")
def test_ls_on_a_server_claiming_a_huge_total_says_the_list_is_incomplete(
    proxy: PagingFaults, proxy_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    proxy.claimed_total = CLAIMED
    assert main(["ls", "--url", proxy_url, "--json"]) == 1
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["complete"] is False
    assert document["totals"]["checkpoints"] == COUNT
    assert "not whole" in err


SMALL_CAP = 500


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> int:
    """The most items a listing reads, cut to SMALL_CAP (raising=False: the old code lacks it)."""
    monkeypatch.setattr(paging, "MAX_ITEMS", SMALL_CAP, raising=False)
    return SMALL_CAP


async def test_a_server_serving_a_claimed_total_forever_is_read_up_to_the_cap(
    client: CheckpointClient, proxy: PagingFaults, small_cap: int
) -> None:
    """A server that served full pages of a claimed 10**12 kept `ls` reading, its memory
    growing, for good: now a listing reads at most MAX_ITEMS, once, and says it is cut."""
    proxy.claimed_total, proxy.endless = CLAIMED, True
    listing = await asyncio.wait_for(client.read_all_checkpoints(page_size=1000), 300)
    assert not listing.complete
    assert f"claims {CLAIMED:,} items, more than ckpt-tui reads ({small_cap:,})" in listing.problem
    assert len(listing.items) == small_cap
    assert len(proxy.pages) == -(-small_cap // 37)  # one read, nothing past the cap


@pytest.mark.usefixtures("quiet_environment")
def test_ls_on_a_server_serving_a_claimed_total_forever_stops_at_the_cap(
    proxy: PagingFaults, proxy_url: str, small_cap: int, capsys: pytest.CaptureFixture[str]
) -> None:
    proxy.claimed_total, proxy.endless = CLAIMED, True
    assert main(["ls", "--url", proxy_url, "--json"]) == 1
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["complete"] is False
    assert document["totals"]["checkpoints"] == small_cap
    assert any("more than ckpt-tui reads" in problem for problem in document["problems"])
    assert "not whole" in err


@pytest.mark.usefixtures("quiet_environment")
def test_ls_json_counts_every_checkpoint_through_a_capping_proxy(
    proxy_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ls", "--url", proxy_url, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["complete"] is True
    assert document["totals"]["checkpoints"] == COUNT


@pytest.mark.usefixtures("quiet_environment")
def test_ls_and_prune_on_an_incomplete_list(
    proxy: PagingFaults, proxy_url: str, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    proxy.fail_offsets({37 * 2})
    assert main(["ls", "--url", proxy_url, "--json"]) == 1
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["complete"] is False
    assert document["totals"]["checkpoints"] == COUNT - 37
    assert "incomplete" in document["problems"][0] and "not whole" in err

    before = stored_paths(store)
    assert main(["prune", "--url", proxy_url, "--keep-last", "1", "--yes"]) == 1
    err = capsys.readouterr().err
    assert "Nothing was planned or deleted" in err
    assert stored_paths(store) == before


@pytest.fixture
def faulty_demo_pages(
    tmp_path: Path, clock: FixedClock
) -> Iterator[tuple[ServedDemo, PagingFaults]]:
    holder: list[PagingFaults] = []

    def wrap(app: object) -> PagingFaults:
        holder.append(PagingFaults(app, cap=5))  # type: ignore[arg-type]
        return holder[0]

    with served_demo(tmp_path / "demo", clock, wrap=wrap) as served:
        yield served, holder[0]


async def test_the_app_says_incomplete_marks_nothing_missing_and_refuses_a_keep_policy(
    faulty_demo_pages: tuple[ServedDemo, PagingFaults],
) -> None:
    demo, proxy = faulty_demo_pages
    proxy.fail_offsets({10})
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = screen_of(app)
        snapshot = screen.fleet.states[0].snapshot
        assert snapshot is not None and not snapshot.complete
        catalog = screen.catalog
        assert catalog is not None
        assert not any(row.is_missing for row in catalog.rows)
        messages = [n.message for n in app._notifications]
        assert any("Nothing is marked missing" in message for message in messages)
        await pilot.press("K")
        await settle(pilot)
        assert screen_of(app) is app.screen  # no dialog opened
        messages = [n.message for n in app._notifications]
        assert any("No keep policy on a partial list" in message for message in messages)
        before = stored_paths(demo.store)
    assert stored_paths(demo.store) == before
