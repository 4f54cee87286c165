"""Sending one API call with retries: jittered exponential backoff, `Retry-After`, and the
rules that make retried writes safe.

Retried: connection failures, 429 and 5xx, for every call (reads and the idempotent writes),
unless the answer says `x-should-retry: false` (as the official SDK, the header decides first:
`true` retries any status).
A write whose earlier attempt may have been performed (5xx, or the connection dropped after
the request went out) counts as done when a retry is answered "already so": 404 for a
delete, 409 for publish/unpublish (see `Call.done_if_retried`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import msgspec

from ckpt_tui.client.endpoint import API_KEY_HEADER
from ckpt_tui.client.errors import (
    ClientError,
    ConnectionFailed,
    Timeout,
    api_error,
    detail_of,
    library_text,
)
from ckpt_tui.client.pacing import Pace
from ckpt_tui.client.secret import HIDDEN, Secret
from ckpt_tui.client.stopping import before_sending

Sleep = Callable[[float], Awaitable[None]]
ATTEMPT_DEADLINE = 120.0
"""Seconds one attempt may take in all (connect, send, every read of the answer). The read
timeout bounds each read only: a server that sends a byte now and then would keep a command
waiting for good. 120 s is four read timeouts: ample for the biggest answer asked for (a page
of 10,000 checkpoints, a few MB), short enough that a hung backend still gets its error entry.
Waiting for a pace slot does not count (queued changes wait their turn)."""


class RetryPolicy(msgspec.Struct, frozen=True):
    """How often and how patiently to retry; `sleep` and `jitter` (0..1) are injectable."""

    max_attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 4.0
    max_retry_after: float = 30.0
    sleep: Sleep = asyncio.sleep
    jitter: Callable[[], float] = random.random
    attempt_deadline: float | None = None
    """Seconds one attempt may take in all; None: `ATTEMPT_DEADLINE`."""

    @property
    def deadline(self) -> float:
        return ATTEMPT_DEADLINE if self.attempt_deadline is None else self.attempt_deadline

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based); a server hint wins, capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        return ceiling * (0.5 + 0.5 * self.jitter())


class Call(msgspec.Struct, frozen=True):
    """One API call: what to send, and how to talk about it in errors."""

    method: str
    path: str
    subject: str
    params: dict[str, Any] | None = None
    body: Any = None
    done_if_retried: frozenset[int] = frozenset()
    key: Secret | None = None
    """Sent in `X-API-Key` instead of the session's auth (the start-up calls)."""
    authenticated: bool = True
    """False: sent without the client's session auth (start-up calls, the health check)."""


class Target(msgspec.Struct, frozen=True):
    """Where calls go, for error messages: the URL shown to people, and a function naming the
    credential that was sent ('the API key from TINKER_API_KEY'; None: none), asked only once
    an answer is in (start-up, which settles it, runs inside the request)."""

    display_url: str
    credential: Callable[[], str | None] = lambda: None


class KeyHeader(httpx.Auth):
    """Sends one key in `X-API-Key` (a start-up call's credential): the key is revealed only
    into the request's headers, never into an argument or a local of the callers' frames."""

    def __init__(self, header: str, key: Secret) -> None:
        self._header = header
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._header] = self._key.reveal()
        yield request


class _Failure(msgspec.Struct):
    """A failed attempt: the error to raise if it is the last one, and what it implies."""

    error: ClientError
    retryable: bool
    maybe_performed: bool
    retry_after: float | None = None


async def send_with_retries(
    client: httpx.AsyncClient,
    call: Call,
    policy: RetryPolicy,
    target: Target,
    pace: Pace | None = None,
) -> httpx.Response:
    """Send `call`; return a 2xx answer (or a "done already" one); raise a ClientError.

    With a `pace`, each attempt waits for one of its slots and tells it how it went."""
    maybe_performed = False
    for attempt in range(1, policy.max_attempts + 1):
        result = await _paced_attempt(client, call, target, pace, policy, attempt == 1)
        if isinstance(result, httpx.Response):
            if result.is_success or (
                maybe_performed and result.status_code in call.done_if_retried
            ):
                return result
            result = _status_failure(result, call, target)
        if not result.retryable or attempt == policy.max_attempts:
            raise result.error
        maybe_performed = maybe_performed or result.maybe_performed
        await policy.sleep(policy.delay(attempt, result.retry_after))
    raise AssertionError("unreachable: the loop returns or raises")


# A scope that cancels this task itself, not asyncio.wait_for: before 3.12 wait_for runs the
# attempt as a task of its own, whose failure is logged as "never retrieved" (a traceback on
# stderr) when the caller is cancelled as it ends. asyncio's own scope where there is one
# (3.11): anyio's cost a tenth of a bulk delete's client CPU (py-spy of a prune of 10,000;
# bench_client_cpu.py --reps 9, turn about: 0.48 and 0.54 ms of the client's CPU per
# DELETE before, 0.44 and 0.45 after).
if sys.version_info >= (3, 11):
    _deadline = asyncio.timeout
else:

    @contextlib.asynccontextmanager
    async def _deadline(seconds: float) -> AsyncIterator[None]:
        with anyio.fail_after(seconds):
            yield


async def _deadlined(
    attempt: Awaitable[httpx.Response | _Failure], policy: RetryPolicy, call: Call, target: Target
) -> httpx.Response | _Failure:
    """The attempt's result, or a timeout failure (as httpx's own) once it has taken longer
    than the policy's deadline in all."""
    try:
        async with _deadline(policy.deadline):
            return await attempt
    except TimeoutError:
        message = (
            f"{target.display_url} did not finish answering {call.subject} within "
            f"{policy.deadline:g} s; try again later"
        )
        return _Failure(Timeout(message, detail="attempt deadline"), False, True)


async def _paced_attempt(
    client: httpx.AsyncClient,
    call: Call,
    target: Target,
    pace: Pace | None,
    policy: RetryPolicy,
    first: bool,
) -> httpx.Response | _Failure:
    if pace is None:
        return await _deadlined(_attempt(client, call, target), policy, call, target)
    async with pace.slot() as slot:
        if first:  # a stopped bulk run sends no new change (ckpt_tui.client.stopping)
            before_sending()
        result = await _deadlined(_attempt(client, call, target), policy, call, target)
        if isinstance(result, httpx.Response):
            status = result.status_code
            slot.answered(status, _retry_after(result) if status in (429, 503) else None)
        return result


async def _attempt(
    client: httpx.AsyncClient, call: Call, target: Target
) -> httpx.Response | _Failure:
    try:
        response = await client.request(
            call.method,
            call.path,
            params=call.params,
            json=call.body,
            auth=(
                KeyHeader(API_KEY_HEADER, call.key)
                if call.key is not None
                else httpx.USE_CLIENT_DEFAULT
                if call.authenticated
                else None
            ),
        )
    except httpx.TransportError as exc:
        return _transport_failure(exc, call, target)
    # httpx binds the stream of each response to the response, a reference cycle that only
    # the garbage collector frees: read in full, the response needs the stream no more, and
    # without the cycle it goes when its caller is done. 0.52-0.55 against 0.59-0.62 ms of
    # the client's CPU a DELETE (benchmarks/bench_client_cpu.py --reps 5, turn about).
    response.stream = httpx.ByteStream(response.content)
    return response


def _status_failure(response: httpx.Response, call: Call, target: Target) -> _Failure:
    status = response.status_code
    retry_after = _retry_after(response) if status in (429, 503) else None
    error = api_error(
        status,
        without_sent_key(detail_of(response.content, response.reason_phrase), response.request),
        url=target.display_url,
        subject=call.subject,
        credential=target.credential(),
        retry_after=retry_after,
        reading=call.method in ("GET", "HEAD"),
    )
    retryable = _should_retry(response)
    return _Failure(error, retryable, maybe_performed=status >= 500, retry_after=retry_after)


def without_sent_key(text: str, request: httpx.Request) -> str:
    """A server's words with the key that was sent it masked: a server that echoes the key
    back ("bad key tml-...") must not make it show."""
    if not request.headers.get(API_KEY_HEADER):
        return text
    return text.replace(request.headers[API_KEY_HEADER], HIDDEN)


def _should_retry(response: httpx.Response) -> bool:
    """The server's `x-should-retry` when it says true or false; else 429 and 5xx are retried."""
    advice: str = response.headers.get("x-should-retry", "").strip().lower()
    if advice in ("true", "false"):
        return advice == "true"
    status: int = response.status_code
    return status == 429 or status >= 500


def _retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds; the HTTP-date form is ignored (backoff applies instead)."""
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None


def _transport_failure(exc: httpx.TransportError, call: Call, target: Target) -> _Failure:
    url, said = target.display_url, library_text(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        message = f"could not connect to {url}: no answer to the connection attempt"
        return _Failure(ConnectionFailed(message, detail=said), True, False)
    if isinstance(exc, httpx.ConnectError):
        message = f"could not connect to {url}: {_connect_reason(said)}{_hint(url)}"
        return _Failure(ConnectionFailed(message, detail=said), True, False)
    if isinstance(exc, httpx.TimeoutException):
        message = (
            f"{url} did not answer {call.subject} in time ({type(exc).__name__}); "
            "try again, or raise the timeout"
        )
        return _Failure(Timeout(message, detail=said), False, True)
    reason = said or type(exc).__name__
    message = f"the connection to {url} was lost during {call.subject}: {reason}"
    return _Failure(ConnectionFailed(message, detail=said), True, True)


def _connect_reason(text: str) -> str:
    if "refused" in text.lower() or "all connection attempts failed" in text.lower():
        return "connection refused"
    return text or "connection failed"


def _hint(url: str) -> str:
    host = urlsplit(url).hostname or ""
    if host in ("localhost", "::1") or host.startswith("127."):
        return " — is `ckpt-tui serve` running?"
    return " — check the URL and your network"
