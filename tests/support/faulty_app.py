"""A real ASGI app that wraps another (the real server) and injects faults, for tests and
benchmarks.

    faulty = FaultyApp(create_app(store, sweep_interval=None))
    faulty.fail_first(2, path="/api/v1/checkpoints", status=503)
    faulty.fail_first(1, status=429, retry_after=1)
    faulty.fail_names({"0003"})                 # checkpoints named 0003 always answer 500
    faulty.drop_response(1, method="DELETE")    # perform the delete, then answer 503
    faulty.delay = 0.05                         # every request waits 50 ms first
    gate = faulty.hold(method="PUT")            # matching requests wait until gate.set()
    gate = faulty.hold(method="DELETE", after=8)  # the first 8 go through, the rest wait
    gate = faulty.hold(method="GET", query="limit=1")  # only GETs asking exactly that wait
    faulty.gather(3, method="DELETE")           # the next 3 wait until all 3 are in
    faulty.slow_after(100, clock, method="DELETE")  # after 100, each one costs a virtual second

`in_flight` counts the requests being answered now (until the last of the answer goes out),
`most_in_flight` the most at once, and `arrivals(method)` how many were in flight (itself
included) as each such request came in.

Rules match on method (None = any) and on a substring of the request path. `requests` logs
every `(method, path)` seen, so tests can count attempts; `headers` logs each request's headers.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_CHECKPOINT_NAME = re.compile(r"/checkpoints/[a-z_]+/([^/]+)")


@dataclass
class _Rule:
    """Answer `status` to the next `remaining` matching requests (optionally after acting)."""

    remaining: int
    status: int
    method: str | None
    path: str
    retry_after: float | None = None
    perform_first: bool = False
    headers: tuple[tuple[str, str], ...] = ()

    def take(self, method: str, path: str) -> bool:
        if self.remaining <= 0 or self.path not in path:
            return False
        if self.method is not None and self.method != method:
            return False
        self.remaining -= 1
        return True


class FaultyApp:
    """Forwards to `app`, except where a configured fault applies."""

    def __init__(self, app: ASGIApp, delay: float = 0.0) -> None:
        self.app = app
        self.delay = delay
        self.failing_names: set[str] = set()
        self.failing_status = 500
        self.requests: list[tuple[str, str]] = []
        self.queries: list[str] = []
        """Each request's query string, in the order of `requests`."""
        self.headers: list[dict[str, str]] = []
        self._rules: list[_Rule] = []
        self._holds: list[tuple[str | None, int, threading.Event, str | None, str | None]] = []
        self.held = 0
        """Requests waiting at a hold now."""
        self.in_flight = 0
        self.most_in_flight = 0
        self._gathering: tuple[str | None, int, asyncio.Event, int] | None = None
        self._arrivals: list[tuple[str, int]] = []
        self._slowing: tuple[str | None, int, VirtualClock] | None = None

    def fail_first(
        self,
        count: int,
        *,
        status: int = 503,
        path: str = "/api/v1/",
        method: str | None = None,
        retry_after: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """The next `count` matching requests get `status` (and `headers`) without reaching
        the server."""
        extra = tuple((headers or {}).items())
        self._rules.append(_Rule(count, status, method, path, retry_after, headers=extra))

    def drop_response(
        self, count: int, *, status: int = 503, path: str = "/api/v1/", method: str | None = None
    ) -> None:
        """The next `count` matching requests are performed, but answered `status`."""
        self._rules.append(_Rule(count, status, method, path, perform_first=True))

    def fail_names(self, names: set[str], status: int = 500) -> None:
        """Every request about a checkpoint whose name is in `names` answers `status`."""
        self.failing_names = set(names)
        self.failing_status = status

    def clear_faults(self) -> None:
        """From now on, forward every request."""
        self._rules.clear()
        self.failing_names = set()

    def hold(
        self,
        method: str | None = None,
        after: int = 0,
        query: str | None = None,
        path: str | None = None,
    ) -> threading.Event:
        """Matching requests, after the first `after` of them, wait until the returned event
        is set (the server runs in a thread). With `query`, only requests whose query string
        is exactly that match (and `after` does not apply); with `path`, only requests to
        exactly that path."""
        gate = threading.Event()
        self._holds.append((method, after, gate, query, path))
        return gate

    def gather(self, count: int, method: str | None = None) -> None:
        """The next `count` matching requests wait until all `count` are in flight together
        (so a client that may send `count` at once is seen doing so)."""
        self._gathering = (method, count, asyncio.Event(), self.count(method))

    def slow_after(self, count: int, clock: VirtualClock, method: str | None = None) -> None:
        """After `count` matching requests in all (from the first), each one advances `clock`
        by a second while in flight: the server slows down, in the time a client reading
        `clock` sees."""
        self._slowing = (method, count, clock)

    def arrivals(self, method: str | None = None) -> list[int]:
        """For each request of `method` (None = any), in order: how many requests were in
        flight as it came in, itself included."""
        return [n for m, n in self._arrivals if method is None or m == method]

    def count(self, method: str | None = None, path: str = "") -> int:
        """How many requests so far matched `method` (None = any) and contain `path`."""
        return sum(1 for m, p in self.requests if (method is None or m == method) and path in p)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = str(scope["method"]), str(scope["path"])
        self.requests.append((method, path))
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        self.queries.append(query)
        self.headers.append({k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]})
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self._arrivals.append((method, self.in_flight))
        answered = False

        async def send_counted(message: Message) -> None:
            # Out of flight before the last of the answer goes out: once the client has read
            # it, it may send its next request before this coroutine runs again, and that
            # one must not find this one still counted.
            nonlocal answered
            last = message["type"] == "http.response.body" and not message.get("more_body")
            if last and not answered:
                answered = True
                self.in_flight -= 1
            await send(message)

        try:
            await self._answer(scope, receive, send_counted, method, path, query)
        finally:
            if not answered:
                self.in_flight -= 1

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, method: str, path: str, asked: str
    ) -> None:
        """Answer one request; `asked` is its query string."""
        # This request's place among those each hold counts, as it came: a hold "after the
        # first n" lets the first n through even when, after waiting at an earlier gate,
        # more than n have come.
        places = {held[0]: self.count(held[0]) for held in self._holds}
        await self._gather(method)
        self._slow_down(method)
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        for held_method, after, gate, query, held_path in self._holds:
            if held_method not in (None, method) or held_path not in (None, path):
                continue
            place = places.get(held_method) or self.count(held_method)  # a hold added since
            if (query is None and place > after) or query == asked:
                self.held += 1
                try:
                    await asyncio.to_thread(gate.wait)
                finally:
                    self.held -= 1
        rule = next((r for r in self._rules if r.take(method, path)), None)
        if rule is not None:
            if rule.perform_first:
                await self.app(scope, receive, _discard)
            detail = f"injected fault {rule.status}"
            await _answer(send, rule.status, detail, rule.retry_after, rule.headers)
            return
        match = _CHECKPOINT_NAME.search(path)
        if match and match.group(1) in self.failing_names:
            detail = f"injected failure for checkpoint {match.group(1)}"
            await _answer(send, self.failing_status, detail, None)
            return
        await self.app(scope, receive, send)

    def _slow_down(self, method: str) -> None:
        if self._slowing is None or self._slowing[0] not in (None, method):
            return
        if self.count(method) > self._slowing[1]:
            self._slowing[2].now += 1.0

    async def _gather(self, method: str) -> None:
        if self._gathering is None or self._gathering[0] not in (None, method):
            return
        wanted, arrived, before = self._gathering[1:]
        if self.count(self._gathering[0]) - before > wanted:
            return
        if self.in_flight >= wanted:
            arrived.set()
        await arrived.wait()


class VirtualClock:
    """A clock that moves only when told (`now += seconds`): what a paced client reads."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _discard(message: Message) -> None:
    """A `send` that drops the real answer (the action was still performed)."""


async def _answer(
    send: Send,
    status: int,
    detail: str,
    retry_after: float | None,
    extra: tuple[tuple[str, str], ...] = (),
) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((name.encode(), value.encode()) for name, value in extra),
    ]
    if retry_after is not None:
        headers.append((b"retry-after", f"{retry_after:g}".encode()))
    start: dict[str, Any] = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})


class RecordedSleeps:
    """A `RetryPolicy.sleep` that returns at once and records what it was asked to wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
