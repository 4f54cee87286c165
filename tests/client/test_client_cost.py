"""What one request costs the client: nothing it sends imports a module, and requests go
over small connection pools under the backend's one httpx client (ckpt_tui.client.lanes).
Both were found measuring `prune --yes`: httpcore tried `import sniffio` at every request
(missing since anyio 4.12 stopped bringing it), a failed import that searches sys.path each
time, and one pool of 32 connections cost its expiry check on each connection at each
request."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType

import httpx
import pytest

from ckpt_tui.client import CheckpointClient, Endpoint, run_bulk
from ckpt_tui.client.client import PAGE_CONCURRENCY
from ckpt_tui.client.lanes import LANE_WIDTH, LanesTransport, environment_proxy, lane_count
from ckpt_tui.store import Store
from tests.support.seed import seed_store


class ImportWatch:
    """A meta path finder first in line: records every module name an import looks for."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        self.names.append(name)
        return None


@contextmanager
def imports_watched() -> Iterator[ImportWatch]:
    watch = ImportWatch()
    sys.meta_path.insert(0, watch)
    try:
        yield watch
    finally:
        sys.meta_path.remove(watch)


async def test_requests_look_for_no_module(server_url: str, made: list[str]) -> None:
    async with CheckpointClient(Endpoint.remote(server_url)) as client:
        await client.delete_checkpoint(made[0])  # the first of each kind may import
        await client.list_checkpoints(limit=5)
        with imports_watched() as watch:
            for path in made[2:8]:
                await client.delete_checkpoint(path)
            await client.list_checkpoints(limit=5)
    assert watch.names == []


def test_a_ceiling_is_spread_over_lanes_of_a_few_connections() -> None:
    assert lane_count(1) == 1
    assert lane_count(LANE_WIDTH) == 1
    assert lane_count(LANE_WIDTH + 1) == 2
    assert lane_count(32) == 32 // LANE_WIDTH


async def test_each_request_takes_the_least_busy_lane_until_its_answer_is_closed() -> None:
    made: list[httpx.MockTransport] = []

    def make() -> httpx.MockTransport:
        made.append(httpx.MockTransport(lambda request: httpx.Response(200, content=b"ok")))
        return made[-1]

    lanes = LanesTransport(make, 3)
    async with httpx.AsyncClient(transport=lanes, base_url="http://backend") as http:
        held = [await http.send(http.build_request("GET", "/"), stream=True) for _ in range(3)]
        assert lanes.busy == [1, 1, 1]
        fourth = await http.send(http.build_request("GET", "/"), stream=True)
        assert sorted(lanes.busy) == [1, 1, 2]
        for answer in [*held, fourth]:
            await answer.aclose()
        assert lanes.busy == [0, 0, 0]
        await http.get("/")  # read and closed at once
        assert lanes.busy == [0, 0, 0]
        assert lanes.sent == [3, 1, 1]
        assert lanes.made == len(made) == 3
    assert lanes.made == 0  # closing the client closed its lanes


async def test_one_backend_is_one_httpx_client_whose_requests_spread_over_lanes(
    server_url: str, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [f"tinker://{run}/{cid}" for run, cid in seed_store(store, runs=2, per_run=40)]
    made: list[httpx.AsyncClient] = []
    init = httpx.AsyncClient.__init__

    def counted(self: httpx.AsyncClient, *args: object, **kwargs: object) -> None:
        made.append(self)
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.AsyncClient, "__init__", counted)
    client = CheckpointClient(Endpoint.remote(server_url), max_in_flight=64)
    async with client:
        outcomes = await run_bulk(paths, client.delete_checkpoint, concurrency=64)
        await asyncio.gather(*(client.list_checkpoints(limit=5) for _ in range(4)))
        assert all(outcome.ok for outcome in outcomes)
        assert len(made) == 1  # the changes, the reads and the start-up: one client
        lanes = client.lanes
        assert lanes is not None
        assert len(lanes.sent) == lane_count(64 + PAGE_CONCURRENCY)
        assert lanes.made > 1 and sum(lanes.sent) >= len(paths) + 4
        assert lanes.busy == [0] * len(lanes.busy)
    assert made[0].is_closed


def test_an_in_process_backend_has_no_lanes() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200))
    client = CheckpointClient(Endpoint.remote("http://backend"), transport=transport)
    assert client.lanes is None


def test_lanes_use_the_proxy_the_environment_names_as_httpx_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert environment_proxy("https://api.example") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert environment_proxy("https://api.example") == "http://proxy.example:3128"
    assert environment_proxy("http://api.example") is None
    monkeypatch.setenv("ALL_PROXY", "http://all.example:3128")
    assert environment_proxy("http://api.example") == "http://all.example:3128"
    monkeypatch.setenv("NO_PROXY", "api.example")
    assert environment_proxy("https://api.example") is None
