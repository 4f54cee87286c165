"""One backend's requests spread over several small connection pools ("lanes") under one
`httpx.AsyncClient`: the client, its credential, headers and session stay one.

httpcore's pool looks at each connection it holds whenever a request starts or an answer
ends (its expiry check asks every idle connection's socket whether it is readable), so one
pool's CPU time per request grows with its number of connections. Bulk changes keep up to the
pace's ceiling in flight: spread over lanes of at most `LANE_WIDTH` connections each, the
client's CPU time per DELETE against a server that answers at once went from 2.7 ms (one pool
of 32) to 1.0-1.3 ms (4 to 8 lanes), which is what decides how many deletes per second one
client process sends on a busy 2-core machine (`benchmarks/bench_client_cpu.py`).

Each request goes to the lane with the fewest requests on it (a request is on its lane from
when it is sent until its answer is closed); lanes are made on first use.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from urllib.request import getproxies, proxy_bypass

import httpx

LANE_WIDTH = 8
"""Connections per lane: the per-request cost stays that of a small pool."""


def lane_count(in_flight: int) -> int:
    """Enough lanes for `in_flight` requests at once, `LANE_WIDTH` to a lane."""
    return max(1, -(-in_flight // LANE_WIDTH))


def environment_proxy(base_url: str) -> str | None:
    """The proxy the environment names for `base_url` (`HTTPS_PROXY`, `ALL_PROXY`, ... less
    `NO_PROXY`), as httpx's own client would use it: a transport of our own must ask."""
    url = httpx.URL(base_url)
    if proxy_bypass(url.host):
        return None
    proxies = getproxies()
    return proxies.get(url.scheme) or proxies.get("all")


def lane_transport(base_url: str, verify: ssl.SSLContext | bool) -> httpx.AsyncHTTPTransport:
    """One lane: a pool of `LANE_WIDTH` connections to `base_url`."""
    limits = httpx.Limits(max_connections=LANE_WIDTH, max_keepalive_connections=LANE_WIDTH)
    proxy = environment_proxy(base_url)
    return httpx.AsyncHTTPTransport(verify=verify, limits=limits, proxy=proxy)


class LanesTransport(httpx.AsyncBaseTransport):
    """`count` transports made by `make` on first use; each request goes to the least busy.

    `busy` is the requests on each lane now, `sent` those each lane has carried in all."""

    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport], count: int) -> None:
        self._make = make
        self._lanes: list[httpx.AsyncBaseTransport | None] = [None] * count
        self.busy = [0] * count
        self.sent = [0] * count

    @property
    def made(self) -> int:
        """How many lanes exist so far."""
        return sum(lane is not None for lane in self._lanes)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = min(range(len(self.busy)), key=self.busy.__getitem__)
        lane = self._lanes[index]
        if lane is None:
            lane = self._lanes[index] = self._make()
        self.busy[index] += 1
        self.sent[index] += 1
        try:
            response = await lane.handle_async_request(request)
        except BaseException:
            self.busy[index] -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_OnLane(response.stream, lambda: self._leave(index)),
            extensions=response.extensions,
        )

    def _leave(self, index: int) -> None:
        self.busy[index] -= 1

    async def aclose(self) -> None:
        for index, lane in enumerate(self._lanes):
            if lane is not None:
                self._lanes[index] = None
                await lane.aclose()


class _OnLane(httpx.AsyncByteStream):
    """An answer's body that takes its request off its lane when closed (once)."""

    def __init__(self, stream: httpx.AsyncByteStream, leave: Callable[[], None]) -> None:
        self._stream = stream
        self._leave: Callable[[], None] | None = leave

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            if self._leave is not None:
                self._leave()
                self._leave = None
