"""What one request costs the client: nothing it sends imports a module, and bulk changes go
over small connection pools (ckpt_tui.client.lanes). Both were found measuring `prune --yes`:
httpcore tried `import sniffio` at every request (missing since anyio 4.12 stopped bringing
it), a failed import that searches sys.path each time, and one pool of 32 connections cost
its expiry check on each connection at each request."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType

import httpx

from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.client.lanes import LANE_WIDTH, Lanes, lane_count


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


async def test_each_call_takes_the_least_busy_lane_and_lanes_are_made_once() -> None:
    made: list[httpx.AsyncClient] = []

    def make() -> httpx.AsyncClient:
        made.append(httpx.AsyncClient())
        return made[-1]

    lanes = Lanes(make, 3)
    async with lanes.lane() as first, lanes.lane() as second, lanes.lane() as third:
        assert len({id(first), id(second), id(third)}) == 3
        async with lanes.lane() as fourth:
            assert fourth in (first, second, third)
    async with lanes.lane() as again:
        assert again is first
    assert len(made) == 3
    await lanes.aclose()
    assert all(client.is_closed for client in made)
