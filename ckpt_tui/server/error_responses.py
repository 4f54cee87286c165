"""How the server turns failures into `{"detail": ...}` JSON answers.

Every non-2xx answer has the body `{"detail": "<message>"}`, as the Tinker API does; a client
shows the message as is, so each one says what was wrong and what to do.

The official SDK retries 408, 409, 429 and 5xx for minutes unless the answer says
`x-should-retry: false`, which it obeys first. So every 4xx a retry cannot fix carries that
header, and 429 and 503 carry `Retry-After`. A storage failure is 507 (no room: a full disk,
a used-up quota, a read-only file system) or 503 (an I/O error, a locked metadata file); only
the locked file is worth retrying (`Retry-After`), the others say `x-should-retry: false`.
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from functools import wraps
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ckpt_tui.store.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    ReadOnlyStoreError,
    StorageError,
    StorageFullError,
    StoreClosedError,
    StoreError,
)
from ckpt_tui.store.names import UnsafeNameError
from ckpt_tui.store.storage import is_storage_failure, storage_error

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
    (StorageFullError, 507),  # full, over quota, read-only file system: free space first
    (StorageError, 503),  # an I/O error (no retry), a locked metadata file (retry soon)
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
    retry_helps: bool | None = None,
    retry_after: float | None = None,
) -> Response:
    """The one shape of every error answer, with the retry advice its status calls for.

    `retry_helps`: None goes by the status (a 4xx other than 408 and 429 cannot be fixed by
    trying again; a 5xx may be); True for a 4xx a retry can fix (an expired JWT); False for a
    5xx it cannot (a full disk). 429 and 503 answers a retry can help say when to try:
    `retry_after` seconds, else RETRY_AFTER_SECONDS.
    """
    advice = dict(headers or {})
    if retry_helps is None:
        retry_helps = not 400 <= status < 500 or status in RETRYABLE_4XX
    if not retry_helps:
        advice["x-should-retry"] = "false"
    elif status in (429, 503):
        wait = RETRY_AFTER_SECONDS if retry_after is None else max(1, math.ceil(retry_after))
        advice.setdefault("Retry-After", str(wait))
    return JSONResponse({"detail": detail}, status_code=status, headers=advice)


def response_for(exc: Exception) -> Response:
    """Map any exception to its JSON answer; unexpected ones become a logged 500."""
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.detail)
    if isinstance(exc, (OSError, sqlite3.Error)) and is_storage_failure(exc):
        # a storage failure the store did not name (a read): the same answer as a named one
        exc = storage_error(exc, "the request")
    for cls, status in STORE_ERROR_STATUS:
        if isinstance(exc, cls):
            return error_response(status, str(exc) or cls.__name__, **_retry_advice(exc))
    logger.error("internal error while serving a request", exc_info=exc)
    return error_response(500, f"internal server error: {type(exc).__name__}: {exc}")


def _retry_advice(exc: Exception) -> dict[str, Any]:
    """A storage failure says whether trying again can help, and when."""
    if not isinstance(exc, StorageError):
        return {}
    return {"retry_helps": exc.retry_after is not None, "retry_after": exc.retry_after}


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
