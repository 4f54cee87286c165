"""A real ASGI app in front of the server that counts the file bytes it passes on, and can
cut a download's connection or stall it after some bytes (a small fault-injecting proxy).

    tap = FileTap(create_app(store, sweep_interval=None))
    tap.cut_after = 5000        # every file answer's connection is dropped after 5000 bytes
    tap.stall_after = 5000      # or: the answer stops there until `tap.release.set()`
    tap.refuse_files = True     # file requests answer 503 without reaching the server
    tap.refuse_after_cut = True # after the first cut, every file request answers 503

Only answers of signed file URLs (`/api/v1/signed/`) are touched; `sent` counts their body
bytes, `statuses` their status codes, `url_asks` the external_weights_urls calls seen. An
answer keeps the faults set when it was asked for; `reset()` starts a new count that no
answer asked for before it adds to.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SIGNED = "/api/v1/signed/"


class ConnectionCut(Exception):
    """Raised inside the server's send: uvicorn drops the connection mid-body."""


class FileTap:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.sent = 0
        self.statuses: list[int] = []
        self.url_asks = 0
        self.cut_after: int | None = None
        self.stall_after: int | None = None
        self.refuse_files = False
        self.refuse_after_cut = False
        self.release = threading.Event()
        self._round = 0
        """How many resets so far: an answer counts only in the round it was asked in."""

    def reset(self) -> None:
        """Count afresh and touch nothing from now on. An answer asked for before keeps the
        faults it began with and is not counted: on a busy machine a killed client's answer
        can still be read from its file after the reset."""
        self.sent, self.statuses, self.url_asks = 0, [], 0
        self.cut_after = self.stall_after = None
        self.refuse_files = self.refuse_after_cut = False
        self._round += 1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and path.endswith("/external_weights_urls"):
            self.url_asks += 1
        if scope["type"] != "http" or not path.startswith(SIGNED):
            await self.app(scope, receive, send)
            return
        if self.refuse_files:
            await _answer_503(send)
            return
        passed = 0
        asked_in, cut_after = self._round, self.cut_after
        limit = cut_after if cut_after is not None else self.stall_after

        def count(sent: int) -> None:
            if self._round == asked_in:
                self.sent += sent

        async def tapped(message: Message) -> None:
            nonlocal passed
            if message["type"] == "http.response.start" and self._round == asked_in:
                self.statuses.append(int(message["status"]))
            if message["type"] == "http.response.body":
                body: bytes = message.get("body", b"")
                if limit is not None and passed + len(body) > limit:
                    keep = body[: max(0, limit - passed)]
                    if keep:
                        await send({**message, "body": keep, "more_body": True})
                        count(len(keep))
                        passed += len(keep)
                    if cut_after is not None:
                        if self._round == asked_in:
                            self.refuse_files = self.refuse_after_cut
                        raise ConnectionCut
                    await asyncio.to_thread(self.release.wait)
                    raise ConnectionCut
                count(len(body))
                passed += len(body)
            await send(message)

        # A cut response never completes: the client sees the connection end early.
        with contextlib.suppress(ConnectionCut):
            await self.app(scope, receive, tapped)


async def _answer_503(send: Send) -> None:
    headers: list[Any] = [(b"content-type", b"application/json"), (b"x-should-retry", b"false")]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": b'{"detail": "files refused by the test"}'})
