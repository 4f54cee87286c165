"""The network under a backend's one `httpx.AsyncClient`: aiohttp's connection pool and C
HTTP parser, through httpx's transport interface (the client, its auth, its retries and its
errors stay httpx's).

Why: the client's CPU time per request decides how many deletes per second one `prune` sends
on a busy 2-core machine (the client, `serve` and a proxy share them). httpx's own transport
(httpcore and h11, pure Python) cost 1.1-1.4 ms of CPU per DELETE even over small pools;
through aiohttp 0.64-0.75 ms (`benchmarks/bench_client_cpu.py`, 2,000 DELETEs, 32 in flight,
turn about; the rest is httpx's client itself: building the request, its URL and cookies).
Listing 100,000 checkpoints took 80-87 ms of CPU against 99-134. Importing aiohttp costs
about 95 ms of CPU (it builds two TLS contexts at import), so it is imported when the first
request is sent, never by a command that makes none (`serve`, a local store).

Why not the `httpx-aiohttp` package: its 0.2.0 turns a refused connection, a read timeout and
a connection dropped after the request went out all into `httpx.ConnectTimeout`, which our
retry rules read as "never sent" (ckpt_tui.client.retry), and it ignores the environment's
proxies. Here each aiohttp error becomes the httpx error httpcore raises for the same event:

- no connection (refused, unknown host, TLS refused, the proxy unreachable): `ConnectError`;
- no connection in time: `ConnectTimeout` (nothing was sent);
- no answer in time: `ReadTimeout`;
- the connection lost or the answer malformed: `RemoteProtocolError` or `ReadError` (the
  request may have been performed).

Timeouts are httpx's, per request: `connect` bounds the socket's connect, `pool` the wait for
a connection (with its connect), `read` each read; aiohttp has no write timeout (our bodies
are small) and the attempt's deadline bounds all of it (ckpt_tui.client.retry). Cookies and
redirects are left to httpx, compressed answers too. The proxy is the one the environment
names for the backend, as httpx's own client would use it (`environment_proxy`).
"""

from __future__ import annotations

import base64
import errno
import os
import ssl
from collections.abc import AsyncIterator
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.request import getproxies, proxy_bypass

import httpx

from ckpt_tui.client.errors import ConnectionFailed

if TYPE_CHECKING:
    import aiohttp

PROXY_SCHEMES = ("http", "https")
"""The proxies aiohttp speaks to (not SOCKS)."""


def environment_proxy(base_url: str) -> str | None:
    """The proxy the environment names for `base_url` (`HTTPS_PROXY`, `ALL_PROXY`, ... less
    `NO_PROXY`), as httpx's own client would use it: a transport of our own must ask."""
    url = httpx.URL(base_url)
    if proxy_bypass(url.host):
        return None
    proxies = getproxies()
    return proxies.get(url.scheme) or proxies.get("all")


class UnusableProxy(ConnectionFailed):
    """The environment names a proxy this client cannot speak to (said by the first request,
    as a failed connection is: the backend gets its error entry)."""


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Requests to one backend over one aiohttp session of at most `connections` connections
    (made on the first request, in its event loop)."""

    def __init__(self, base_url: str, verify: ssl.SSLContext | bool, connections: int) -> None:
        self._verify = verify
        self.connections = connections
        self._base_url = base_url
        self.proxy: httpx.Proxy | None = None
        self._proxy_headers: list[tuple[str, str]] = []
        self.session: aiohttp.ClientSession | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import aiohttp
        import yarl

        session = self.session or self._open()  # may raise UnusableProxy
        timeout = request.extensions.get("timeout", {})
        body = await request.aread()
        try:
            answer = await session.request(
                request.method,
                yarl.URL(str(request.url), encoded=True),  # httpx encoded it already
                headers=self._headers(request),  # no local of ours holds the key as text
                data=body or None,
                allow_redirects=False,
                proxy=None if self.proxy is None else str(self.proxy.url),
                proxy_headers=self._proxy_headers,
                timeout=_timeout(timeout.get("connect"), timeout.get("read"), timeout.get("pool")),
            )
        except aiohttp.ClientError as exc:
            raise as_httpx_error(exc) from None
        extensions = {"http_version": b"HTTP/1.1", "reason_phrase": (answer.reason or "").encode()}
        return httpx.Response(
            answer.status,
            headers=answer.raw_headers,
            stream=_Body(answer),
            extensions=extensions,
        )

    def _headers(self, request: httpx.Request) -> list[tuple[str, str]]:
        headers = request.headers.multi_items()
        if self.proxy is not None and request.url.scheme == "http":
            headers += self._proxy_headers  # to the proxy itself; aiohttp sends
            # `proxy_headers` only with the CONNECT an https:// backend is reached through
        return headers

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        self.proxy = _proxy(self._base_url)
        self._proxy_headers = [] if self.proxy is None else proxy_headers(self.proxy)
        verify = self._verify
        context = verify if isinstance(verify, ssl.SSLContext) else httpx.create_ssl_context(verify)
        connector = aiohttp.TCPConnector(limit=self.connections, limit_per_host=0, ssl=context)
        session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),  # httpx keeps the cookies
            auto_decompress=False,  # httpx decodes what it asked for
        )
        # aiohttp sends a GET or DELETE again, once, when its connection is lost before the
        # answer: the client would then take a 404 for "not found" where its own first
        # attempt had deleted it (our retries count a retry after a lost connection as
        # "maybe performed": ckpt_tui.client.retry). Off, as aiohttp's own test client does;
        # tests/client/test_aiohttp_transport.py sees one request per attempt.
        session._retry_connection = False
        self.session = session
        return session

    async def aclose(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            await session.close()


def _checked_proxy(url: str, base_url: str) -> httpx.Proxy:
    """The proxy at `url` (its user info sent as `Proxy-Authorization`, as httpx does), if it
    is one aiohttp speaks to."""
    proxy = httpx.Proxy(url)  # keeps the user info out of `proxy.url`
    if proxy.url.scheme not in PROXY_SCHEMES:
        raise UnusableProxy(
            f"could not connect to {base_url}: the environment names the proxy {proxy.url}, "
            "and only http:// and https:// proxies are supported: unset it, or add the "
            "host to NO_PROXY to connect directly"
        )
    return proxy


def proxy_headers(proxy: httpx.Proxy) -> list[tuple[str, str]]:
    """What the proxy is sent: its headers, and its user info as httpcore sends it."""
    headers = proxy.headers.multi_items()
    if proxy.raw_auth is not None:
        user, password = proxy.raw_auth
        token = base64.b64encode(user + b":" + password).decode("ascii")
        headers.append(("Proxy-Authorization", f"Basic {token}"))
    return headers


def _proxy(base_url: str) -> httpx.Proxy | None:
    url = environment_proxy(base_url)
    return None if url is None else _checked_proxy(url, base_url)


@lru_cache(maxsize=8)
def _timeout(
    connect: float | None, read: float | None, pool: float | None
) -> aiohttp.ClientTimeout:
    """httpx's per-request timeouts as aiohttp's (one object per distinct set)."""
    import aiohttp

    return aiohttp.ClientTimeout(sock_connect=connect, connect=pool, sock_read=read)


class _Body(httpx.AsyncByteStream):
    """An answer's body as aiohttp reads it; closing it frees or drops its connection."""

    def __init__(self, answer: aiohttp.ClientResponse) -> None:
        self._answer = answer

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import aiohttp

        try:
            async for chunk in self._answer.content.iter_any():
                yield chunk
        except aiohttp.ClientError as exc:
            raise as_httpx_error(exc) from None

    async def aclose(self) -> None:
        self._answer.release()  # back to the pool if read whole, else closed


def as_httpx_error(exc: aiohttp.ClientError) -> httpx.TransportError:
    """The httpx error httpcore raises for what `exc` says happened, with words that name no
    URL (only an OS or TLS reason)."""
    import aiohttp

    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout("no connection in time")
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return httpx.ReadTimeout("no answer in time")
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return httpx.ProxyError(f"the proxy answered {exc.status}")
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        said = getattr(exc.certificate_error, "verify_message", "") or "refused"
        return httpx.ConnectError(f"TLS certificate not trusted: {said}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(_os_reason(exc.os_error))
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return httpx.RemoteProtocolError("the server closed the connection")
    if isinstance(exc, aiohttp.ClientPayloadError):
        return httpx.RemoteProtocolError("the answer's body ended early or was malformed")
    if isinstance(exc, aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(f"a malformed answer: {exc.message}")
    if isinstance(exc, aiohttp.ClientOSError):
        return httpx.ReadError(_os_reason(exc))
    return httpx.ReadError(type(exc).__name__)


def _os_reason(error: OSError) -> str:
    """'Connection refused' rather than asyncio's "Connect call failed ('127.0.0.1', 9)"."""
    if isinstance(error, ssl.SSLError):
        return error.reason or "TLS failed"
    code = error.errno
    if code is not None and code in errno.errorcode:
        return os.strerror(code)
    return str(error) or type(error).__name__
