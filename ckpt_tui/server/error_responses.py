"""How the server turns failures into `{"detail": ...}` JSON answers.

Every non-2xx answer has the body `{"detail": "<message>"}`, as the Tinker API does; a client
shows the message as is, so each one says what was wrong and what to do.

The official SDK retries 408, 409, 429 and 5xx for minutes unless the answer says
`x-should-retry: false`, which it obeys first. So every 4xx a retry cannot fix carries that
header, and 429 and 503 carry `Retry-After`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import wraps

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ckpt_tui.store.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    ReadOnlyStoreError,
    StoreClosedError,
    StoreError,
)
from ckpt_tui.store.names import UnsafeNameError

logger = logging.getLogger("ckpt_tui.server")

Endpoint = Callable[[Request], Awaitable[Response]]

# Checked in order: the first matching class decides the status.
STORE_ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, 404),
    (ConflictError, 409),
    (InvalidRequestError, 400),
    (UnsafeNameError, 400),
    (ReadOnlyStoreError, 403),
    (StoreClosedError, 503),
    (StoreError, 409),  # the store on disk refuses (a link where a folder was, a failed delete)
)
RETRYABLE_4XX = frozenset({408, 429})
"""Client errors that a later attempt can fix; every other 4xx says `x-should-retry: false`."""
RETRY_AFTER_SECONDS = 5
"""What 429 and 503 answers advise waiting, when the code raising them does not say."""


class ApiError(Exception):
    """A request the server refuses with `status` and a message for the caller."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def error_response(
    status: int,
    detail: str,
    headers: Mapping[str, str] | None = None,
    *,
    retry_helps: bool = False,
) -> Response:
    """The one shape of every error answer, with the retry advice its status calls for
    (`retry_helps`: a 4xx that a retry can fix, such as an expired JWT)."""
    advice = dict(headers or {})
    if 400 <= status < 500 and status not in RETRYABLE_4XX and not retry_helps:
        advice["x-should-retry"] = "false"
    if status in (429, 503):
        advice.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))
    return JSONResponse({"detail": detail}, status_code=status, headers=advice)


def response_for(exc: Exception) -> Response:
    """Map any exception to its JSON answer; unexpected ones become a logged 500."""
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.detail)
    for cls, status in STORE_ERROR_STATUS:
        if isinstance(exc, cls):
            return error_response(status, str(exc) or cls.__name__)
    logger.error("internal error while serving a request", exc_info=exc)
    return error_response(500, f"internal server error: {type(exc).__name__}: {exc}")


def guarded(endpoint: Endpoint) -> Endpoint:
    """Wrap an endpoint so that nothing it raises escapes as an HTML page or a traceback."""

    @wraps(endpoint)
    async def wrapper(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Exception as exc:  # the whole point: every failure gets a JSON answer
            return response_for(exc)

    return wrapper


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 (unknown route, wrong method) as JSON."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        detail = f"no such endpoint: {request.method} {request.url.path}"
    elif exc.status_code == 405:
        detail = f"method {request.method} is not allowed on {request.url.path}"
    else:
        detail = str(exc.detail)
    return error_response(exc.status_code, detail, headers=exc.headers)


async def internal_error_handler(request: Request, exc: Exception) -> Response:
    """Last resort for errors outside the guarded endpoints (e.g. in middleware)."""
    return response_for(exc)
