"""A local store the app is handed opens on its first request (`OpenedOnFirstRequest`): once,
however many requests come first; a failure fails every request with its reason; closing
closes it whether it is open, opening or never opened. A bucket the app is handed begins
opening at once (`begin`), and its first request waits for that open."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from ckpt_tui.cli.clients import Opened, OpenedOnFirstRequest, client_for
from ckpt_tui.client import Endpoint, LocalStoreFailed
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server
from tests.support.seed import seed_store
from tests.support.waiting import until


async def hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hello")


class Opener:
    """Opens a tiny real app (counting opens and closes), after `go` when one is given, or
    fails with `failure`."""

    def __init__(self, failure: str | None = None, go: threading.Event | None = None) -> None:
        self.failure, self.go = failure, go
        self.opened = self.closed = 0
        self.called = threading.Event()

    def __call__(self) -> Opened:
        self.called.set()
        if self.go is not None:
            self.go.wait(30)
        if self.failure is not None:
            raise LocalStoreFailed(self.failure, detail="why")
        self.opened += 1
        app = Starlette(routes=[Route("/", hello)])
        return httpx.ASGITransport(app=app), self.close

    def close(self) -> None:
        self.closed += 1


async def get(transport: httpx.AsyncBaseTransport) -> str:
    async with httpx.AsyncClient(transport=transport, base_url="http://local") as client:
        return (await client.get("/")).text


async def test_the_store_opens_once_on_the_first_requests_and_closes_once() -> None:
    opener = Opener()
    later = OpenedOnFirstRequest(opener)
    assert opener.opened == 0  # nothing before a request
    assert await asyncio.gather(*(get(later) for _ in range(5))) == ["hello"] * 5
    assert await get(later) == "hello"
    assert opener.opened == 1
    later.close()
    later.close()
    assert opener.closed == 1


@pytest.mark.parametrize("begun_early", [False, True], ids=["on-first-request", "begun-early"])
async def test_a_request_cancelled_while_the_store_opens_leaves_the_open_to_the_next(
    begun_early: bool,
) -> None:
    """A load cancelled while its store still opens (a reload) neither cancels that open nor
    makes the next request open the store a second time."""
    go = threading.Event()
    opener = Opener(go=go)
    later = OpenedOnFirstRequest(opener)
    if begun_early:
        later.begin()
    first = asyncio.ensure_future(get(later))
    assert await asyncio.to_thread(opener.called.wait, 30)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.ensure_future(get(later))
    go.set()
    assert await second == "hello"
    assert opener.opened == 1
    later.close()
    assert opener.closed == 1


async def test_a_store_that_does_not_open_fails_every_request_with_its_reason() -> None:
    opener = Opener(failure="could not open local store /x: it is broken")
    later = OpenedOnFirstRequest(opener)
    for _ in range(2):
        with pytest.raises(LocalStoreFailed) as caught:
            await get(later)
        assert caught.value.message == "could not open local store /x: it is broken"
        assert caught.value.detail == "why"


async def test_an_open_that_raised_a_bug_is_tried_again_by_the_next_request() -> None:
    """Only a LocalStoreFailed is the store's answer for good; anything else fails the
    requests that waited for that open, and the next request opens again."""
    opener = Opener()
    tries: list[str] = []

    def flaky() -> Opened:
        tries.append("open")
        if len(tries) == 1:
            raise RuntimeError("a bug")
        return opener()

    later = OpenedOnFirstRequest(flaky)
    with pytest.raises(RuntimeError, match="a bug"):
        await get(later)
    assert await get(later) == "hello"
    assert (len(tries), opener.opened) == (2, 1)


async def test_closed_before_a_request_it_never_opens() -> None:
    opener = Opener()
    later = OpenedOnFirstRequest(opener)
    later.close()
    with pytest.raises(LocalStoreFailed):
        await get(later)
    assert opener.opened == 0


async def test_closed_while_it_opens_the_store_is_closed_once_it_is_open() -> None:
    """The app quits while a store is still opening: the store is closed, not left open."""
    go = threading.Event()
    opener = Opener(go=go)
    later = OpenedOnFirstRequest(opener)
    request = asyncio.ensure_future(get(later))
    assert await asyncio.to_thread(opener.called.wait, 30)  # opening, in its worker thread
    later.close()
    go.set()
    with pytest.raises(LocalStoreFailed):
        await request
    assert (opener.opened, opener.closed) == (1, 1)


async def test_a_client_opened_later_serves_the_store(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "local"
    with Store.open(root, clock) as store:
        made = seed_store(store, runs=2, per_run=3)
    client = client_for(Endpoint.local(root), open_later=True)
    async with client:
        assert len(await client.list_all_checkpoints()) == len(made)


async def test_an_open_begun_early_is_the_one_the_first_requests_use() -> None:
    go = threading.Event()
    opener = Opener(go=go)
    later = OpenedOnFirstRequest(opener)
    later.begin()
    assert await asyncio.to_thread(opener.called.wait, 30)  # opening, with no request yet
    requests = asyncio.gather(*(get(later) for _ in range(3)))
    go.set()
    assert await requests == ["hello"] * 3
    assert opener.opened == 1
    later.close()
    assert opener.closed == 1


async def test_an_open_begun_early_that_fails_fails_every_request_with_its_reason() -> None:
    later = OpenedOnFirstRequest(Opener(failure="could not open local store s3://b/p: denied"))
    later.begin()
    for _ in range(2):
        with pytest.raises(LocalStoreFailed) as caught:
            await get(later)
        assert caught.value.message == "could not open local store s3://b/p: denied"


async def test_closed_while_an_early_open_runs_the_store_is_closed_once_it_is_open() -> None:
    go = threading.Event()
    opener = Opener(go=go)
    later = OpenedOnFirstRequest(opener)
    later.begin()
    assert await asyncio.to_thread(opener.called.wait, 30)
    later.close()
    go.set()
    await until(lambda: opener.closed == 1)
    with pytest.raises(LocalStoreFailed):
        await get(later)
    assert opener.opened == 1


async def test_the_app_s_bucket_is_listed_before_its_first_request(
    s3: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    """What `ckpt-tui` (the app) asks for a bucket: it is listed while nothing has asked the
    client anything yet, and the client then serves what that listing found."""
    L.hf_trainer_output(tmp_path / "synced/qwen-sft", steps=(100, 200))
    s3.upload(s3_bucket, "team", tmp_path / "synced")
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as proxy:
        endpoint = Endpoint.bucket(f"s3://{s3_bucket}/team", endpoint=proxy)
        client = client_for(endpoint, open_later=True, begin_bucket_now=True)
        async with client:
            await until(lambda: bool(faults.listed()))
            listed = await client.list_all_checkpoints()
    assert sorted(c.checkpoint_id for c in listed) == [
        "weights/checkpoint-100",
        "weights/checkpoint-200",
    ]
