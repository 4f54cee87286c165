"""A real ASGI app in front of the test S3 server that forwards every request and injects
faults a real server can have:

    faults = S3Faults(server.endpoint)
    with run_server(faults) as endpoint:          # point the client at `endpoint`
        faults.ignore_conditions = True           # If-Match / If-None-Match dropped (old servers)
        faults.refuse_delete = "locked"           # DeleteObjects answers an <Error> for keys
                                                  # containing "locked" (and keeps them)
        faults.extra_listed_key = "store/x/y"     # every ListObjectsV2 answer also names this
        faults.extra_listed_for = "store/a/"      # ... only the listings of this prefix
        faults.hold_answers_to = picked           # the requests picked(method, path, query)
        faults.hold_answers = threading.Event()   # are done upstream, their answers wait
                                                  # for the event (`answer_held` is set once
                                                  # one waits); `deletes` picks DeleteObjects
        faults.backdate = True                    # objects' times answered as in 2020 (a
                                                  # server clock behind: everything settled)
        faults.endless_listing = True             # every ListObjectsV2 page is empty and
                                                  # names a next page (a token without end)
        faults.refuse_listing = "runs%2F"         # a ListObjectsV2 whose query contains it
                                                  # answers 403 AccessDenied

`requests` logs `(method, path, query)` of every request forwarded; `listed()` gives the
prefixes of the ListObjectsV2 requests among them, in order.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

import httpx
from starlette.types import Receive, Scope, Send

_OBJECT = re.compile(rb"<Object>\s*<Key>([^<]*)</Key>.*?</Object>", re.DOTALL)
_DROPPED = {b"host", b"content-length", b"transfer-encoding", b"connection"}
_LAST_MODIFIED = re.compile(rb"<LastModified>[^<]*</LastModified>")
_OLD_TIME = b"2020-01-01T00:00:00.000Z"
HOLD_GUARD = 300.0
"""Seconds an answer is held at most (a guard: the test sets the event)."""
_CHECKSUMS = (b"content-md5", b"x-amz-checksum-crc32", b"x-amz-checksum-sha256")


class S3Faults:
    """See the module's docstring."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.ignore_conditions = False
        self.refuse_delete: str | None = None
        self.extra_listed_key: str | None = None
        self.extra_listed_for: str | None = None
        self.hold_answers: threading.Event | None = None
        self.hold_answers_to: Callable[[str, str, str], bool] = lambda *_: False
        self.answer_held = threading.Event()
        self.backdate = False
        self.endless_listing = False
        self.refuse_listing: str | None = None
        self.requests: list[tuple[str, str, str]] = []

    def listed(self) -> list[str]:
        """The prefix of each ListObjectsV2 request forwarded, in order."""
        return [
            _prefix(query)
            for method, _, query in self.requests
            if method == "GET" and "list-type=2" in query
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        body = await _body(receive)
        method: str = scope["method"]
        query = scope["query_string"].decode()
        path = scope["raw_path"].decode()
        self.requests.append((method, path, query))
        endless = self.endless_listing and method == "GET" and "list-type=2" in query
        if endless:  # the upstream knows no such token: ask it for the first page
            query = re.sub(r"&?continuation-token=[^&]*", "", query)
        headers = [(k, v) for k, v in scope["headers"] if k not in _DROPPED]
        if self.ignore_conditions:
            headers = [(k, v) for k, v in headers if k not in (b"if-match", b"if-none-match")]
        listing = method == "GET" and "list-type=2" in query
        if listing and self.refuse_listing is not None and self.refuse_listing in query:
            denied = httpx.Response(403, content=_DENIED, headers={"content-type": "text/xml"})
            await _answer(send, denied, _DENIED, False)
            return
        refused: list[bytes] = []
        if method == "POST" and "delete" in query and self.refuse_delete:
            body, refused = _without(body, self.refuse_delete.encode())
            headers = [(k, v) for k, v in headers if k not in _CHECKSUMS]
            digest = base64.b64encode(hashlib.md5(body).digest())
            headers.append((b"content-md5", digest))
        async with httpx.AsyncClient() as client:
            answer = await client.request(
                method,
                f"{self.upstream}{path}" + (f"?{query}" if query else ""),
                headers=headers,
                content=body,
            )
        content = answer.content
        if self.hold_answers is not None and self.hold_answers_to(method, path, query):
            self.answer_held.set()
            await asyncio.to_thread(self.hold_answers.wait, HOLD_GUARD)
        if refused:
            content = _with_errors(content, refused)
        if listing and self.extra_listed_key and self.extra_listed_for in (None, _prefix(query)):
            content = _with_listed(content, self.extra_listed_key)
        if endless:
            content = _endless_page(content)
        if self.backdate:
            content = _LAST_MODIFIED.sub(
                b"<LastModified>" + _OLD_TIME + b"</LastModified>", content
            )
        await _answer(send, answer, content, self.backdate)


def deletes(method: str, path: str, query: str) -> bool:
    """`hold_answers_to` for the DeleteObjects requests."""
    return method == "POST" and "delete" in query


def _prefix(query: str) -> str:
    return parse_qs(query).get("prefix", [""])[0]


_DENIED = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"


def _without(body: bytes, needle: bytes) -> tuple[bytes, list[bytes]]:
    refused = [m.group(1) for m in _OBJECT.finditer(body) if needle in m.group(1)]
    kept = _OBJECT.sub(lambda m: b"" if needle in m.group(1) else m.group(0), body)
    return kept, refused


def _with_errors(content: bytes, keys: list[bytes]) -> bytes:
    errors = b"".join(
        b"<Error><Key>%s</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        % key
        for key in keys
    )
    return content.replace(b"</DeleteResult>", errors + b"</DeleteResult>")


def _with_listed(content: bytes, key: str) -> bytes:
    entry = (
        f"<Contents><Key>{escape(key)}</Key><LastModified>2020-01-01T00:00:00.000Z"
        '</LastModified><ETag>"0"</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass>'
        "</Contents>"
    ).encode()
    return content.replace(b"</ListBucketResult>", entry + b"</ListBucketResult>")


def _endless_page(content: bytes) -> bytes:
    """A ListObjectsV2 answer with no objects that says more follow (and which token)."""
    content = re.sub(
        rb"<Contents>.*?</Contents>|<CommonPrefixes>.*?</CommonPrefixes>",
        b"",
        content,
        flags=re.DOTALL,
    )
    content = re.sub(
        rb"<IsTruncated>[^<]*</IsTruncated>|<NextContinuationToken>[^<]*</NextContinuationToken>",
        b"",
        content,
    )
    more = b"<IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken>"
    return content.replace(b"</ListBucketResult>", more + b"</ListBucketResult>")


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(send: Send, answer: httpx.Response, content: bytes, backdate: bool) -> None:
    headers: list[Any] = [
        (k.encode(), v.encode())
        for k, v in answer.headers.items()
        if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")
    ]
    if backdate:
        old = b"Wed, 01 Jan 2020 00:00:00 GMT"
        headers = [(k, old if k.lower() == b"last-modified" else v) for k, v in headers]
    headers.append((b"content-length", str(len(content)).encode()))
    await send({"type": "http.response.start", "status": answer.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": content})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
