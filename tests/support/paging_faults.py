"""A real ASGI app in front of the server that spoils list pages, as proxies and busy servers do.

    proxy = PagingFaults(create_app(store, sweep_interval=None), cap=100)
    proxy.fail_offsets({200}, times=1)      # the page at offset 200 answers 500, once
    proxy.before_page = lambda offset: ...  # e.g. add or delete a checkpoint mid-read

`cap` cuts every list request's `limit` (a proxy that serves at most `cap` items a page);
`pages` logs the (offset, limit) of each list request that reached the server;
`claimed_total` (e.g. 10**12) replaces the `total_count` of every checkpoint page's answer,
as a server that lies about its list does; with `endless`, every checkpoint page holds
`limit` made-up checkpoints, whatever its offset (a server that serves that claim forever).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LISTS = ("/api/v1/checkpoints", "/api/v1/training_runs")


class PagingFaults:
    def __init__(self, app: ASGIApp, cap: int | None = None) -> None:
        self.app = app
        self.cap = cap
        self.failing: dict[int, int] = {}
        self.before_page: Callable[[int], None] | None = None
        self.pages: list[tuple[int, int]] = []
        self.claimed_total: int | None = None
        self.fail_from: int | None = None
        """Checkpoint pages at this offset or beyond answer 500, every time."""
        self.endless = False

    def fail_offsets(self, offsets: set[int], times: int = 1_000_000) -> None:
        """Checkpoint pages starting at these offsets answer 500, `times` times each."""
        self.failing = dict.fromkeys(offsets, times)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in LISTS:
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope["query_string"].decode()))
        offset = int(query.get("offset", "0"))
        if self.cap is not None:
            query["limit"] = str(min(int(query.get("limit", self.cap)), self.cap))
        if scope["path"] == LISTS[0] and self.fail_from is not None and offset >= self.fail_from:
            self.pages.append((offset, int(query.get("limit", "100"))))
            await _answer_500(send, offset)
            return
        if scope["path"] == LISTS[0] and self.failing.get(offset, 0) > 0:
            self.failing[offset] -= 1
            await _answer_500(send, offset)
            return
        if scope["path"] == LISTS[0]:
            self.pages.append((offset, int(query.get("limit", "100"))))
            if self.before_page is not None:
                self.before_page(offset)
        if scope["path"] == LISTS[0] and self.endless:
            total = self.claimed_total or 10**12
            await _answer_made_up(send, offset, int(query.get("limit", "100")), total)
            return
        scope = {**scope, "query_string": urlencode(query).encode()}
        if scope["path"] == LISTS[0] and self.claimed_total is not None:
            send = _claiming(send, self.claimed_total)
        await self.app(scope, receive, send)


def _claiming(send: Send, total: int) -> Send:
    """A `send` that rewrites the answer's `cursor.total_count` to `total` (the whole body is
    held until it is complete, then sent with its new length)."""
    start: dict[str, Any] = {}
    body = bytearray()

    async def rewrite(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
            return
        body.extend(message.get("body", b""))
        if message.get("more_body", False):
            return
        document = json.loads(body)
        if isinstance(document, dict) and isinstance(document.get("cursor"), dict):
            document["cursor"]["total_count"] = total
        new_body = json.dumps(document).encode()
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", b"%d" % len(new_body)))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": new_body})

    return rewrite


async def _answer_made_up(send: Send, offset: int, limit: int, total: int) -> None:
    """A page of `limit` checkpoints at `offset` (each one its own), of a list of `total`."""
    checkpoints = [
        {
            "checkpoint_id": f"weights/{k:013d}",
            "checkpoint_type": "training",
            "time": "2026-01-01T00:00:00Z",
            "tinker_path": f"tinker://run-000/weights/{k:013d}",
        }
        for k in range(offset, offset + limit)
    ]
    cursor = {"offset": offset, "limit": limit, "total_count": total}
    await _answer_json(send, 200, {"checkpoints": checkpoints, "cursor": cursor})


async def _answer_json(send: Send, status: int, document: object) -> None:
    body = json.dumps(document).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _answer_500(send: Send, offset: int) -> None:
    detail = f"injected failure of the page at offset {offset}"
    await _answer_json(send, 500, {"detail": detail})
