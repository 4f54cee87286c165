"""A real small HTTP forward proxy: an ASGI app (run it with `run_server`) that a client
sends its requests to in proxy form (`GET http://HOST:PORT/path`, `Host: HOST:PORT`, the
proxy's credentials in `Proxy-Authorization`); it forwards each to the host its `Host`
header names and passes the answer back.

    proxy = ForwardProxy()
    with run_server(proxy) as proxy_url:  # HTTP_PROXY=proxy_url
        ...
    proxy.seen  # (method, Host, path) of every request forwarded
    proxy.authorizations  # the Proxy-Authorization header of each, "" if none
"""

from __future__ import annotations

import httpx
from starlette.types import Receive, Scope, Send

from tests.support.s3_faults import _body, _lifespan

_NOT_FORWARDED = {b"host", b"proxy-authorization", b"connection", b"content-length"}


class ForwardProxy:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.authorizations: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        host = headers[b"host"].decode()
        self.seen.append((scope["method"], host, scope["path"]))
        self.authorizations.append(headers.get(b"proxy-authorization", b"").decode())
        query = scope["query_string"].decode()
        url = f"http://{host}{scope['raw_path'].decode()}" + (f"?{query}" if query else "")
        forwarded = [(k, v) for k, v in scope["headers"] if k.lower() not in _NOT_FORWARDED]
        async with httpx.AsyncClient(trust_env=False) as upstream:
            answer = await upstream.request(
                scope["method"], url, headers=forwarded, content=await _body(receive)
            )
        kept = [
            (k.encode(), v.encode())
            for k, v in answer.headers.items()
            if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")
        ]
        kept.append((b"content-length", str(len(answer.content)).encode()))
        await send({"type": "http.response.start", "status": answer.status_code, "headers": kept})
        await send({"type": "http.response.body", "body": answer.content})
