"""What one request costs the client: nothing it sends imports a module, the backend's one
httpx client sends over aiohttp (ckpt_tui.client.aiohttp_transport), and an answer leaves no
garbage for the collector. All were found measuring `prune --yes`: httpcore tried `import
sniffio` at every request (missing since anyio 4.12 stopped bringing it), a failed import
that searches sys.path each time; httpcore's pool and h11 cost 1.1-1.4 ms of CPU per request
where aiohttp costs about half; and every answer was a reference cycle (httpx binds a
response's stream to the response) of about 12 objects, freed only by the collector."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType

import httpx
import pytest

from ckpt_tui.client import CheckpointClient, Endpoint, run_bulk
from ckpt_tui.client.aiohttp_transport import environment_proxy
from ckpt_tui.client.client import PAGE_CONCURRENCY
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


async def first_of_each_kind(client: CheckpointClient, made: list[str]) -> None:
    """A delete and a read: the first of each kind may import or cache."""
    await client.delete_checkpoint(made[0])
    await client.list_checkpoints(limit=5)


async def more_of_each_kind(client: CheckpointClient, made: list[str]) -> None:
    for path in made[2:8]:
        await client.delete_checkpoint(path)
    await client.list_checkpoints(limit=5)


async def test_requests_look_for_no_module(server_url: str, made: list[str]) -> None:
    async with CheckpointClient(Endpoint.remote(server_url)) as client:
        await first_of_each_kind(client, made)
        with imports_watched() as watch:
            await more_of_each_kind(client, made)
    assert watch.names == []


@contextmanager
def garbage_kept() -> Iterator[list[object]]:
    """The collector off while the block runs; after it, what a collection found
    unreachable (objects only a reference cycle kept)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[object] = []
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


async def test_answers_are_freed_without_the_garbage_collector(
    server_url: str, made: list[str]
) -> None:
    async with CheckpointClient(Endpoint.remote(server_url)) as client:
        await first_of_each_kind(client, made)
        with garbage_kept() as garbage:
            await more_of_each_kind(client, made)
            outcomes = await run_bulk(made[8:], client.delete_checkpoint, concurrency=4)
    assert all(outcome.ok for outcome in outcomes)
    assert [o for o in garbage if isinstance(o, httpx.Response | httpx.Request)] == []


class Missing:
    """A meta path finder that says `name` is not installed (as anyio 4.12+ left sniffio)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == self.name:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


async def test_requests_look_for_no_module_even_without_sniffio(
    server_url: str, made: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard above still catches what it was written for: with sniffio missing, httpx's
    own transport (httpcore) looked for it at every request, and this test failed (1940b28,
    465b174); over aiohttp nothing looks for it."""
    monkeypatch.delitem(sys.modules, "sniffio")
    monkeypatch.setattr(sys, "meta_path", [Missing("sniffio"), *sys.meta_path])
    async with CheckpointClient(Endpoint.remote(server_url)) as client:
        await first_of_each_kind(client, made)
        with imports_watched() as watch:
            await more_of_each_kind(client, made)
    assert watch.names == []


async def test_one_backend_is_one_httpx_client_over_one_aiohttp_session(
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
        network = client.network
        assert network is not None and network.session is not None
        assert network.session.connector is not None
        assert network.session.connector.limit == 64 + PAGE_CONCURRENCY
    assert made[0].is_closed
    assert network.session is None  # closed with the client


def test_an_in_process_backend_has_no_network_transport() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200))
    client = CheckpointClient(Endpoint.remote("http://backend"), transport=transport)
    assert client.network is None


def test_the_proxy_is_the_one_the_environment_names_as_httpx_would(
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
