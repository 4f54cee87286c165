"""Errors the checkpoint client raises: its own classes, never httpx's.

Every error has `.message`, a sentence a person can act on, and `.detail`, the server's own
words (the `detail` of its JSON error body) when there was an answer.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")

_MAX_BODY_IN_MESSAGE = 300
_MAX_LIBRARY_TEXT = 200
_QUOTED = re.compile(r"""[bB]?(?:'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?)""")
"""A quoted literal in a library's message (h11: "Illegal header value b'...'"), to its end."""


class ClientError(Exception):
    """Base class of everything the client raises."""

    status: int | None = None

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class CredentialsError(ClientError):
    """The credentials file exists but cannot be understood."""


class InvalidUrlError(ClientError):
    """The server URL cannot be one (no http:// or https://, or no host)."""


class ConnectionFailed(ClientError):
    """No connection could be made (refused, unknown host, local store unusable)."""


class LocalStoreFailed(ConnectionFailed):
    """A local store (`--local`) could not be opened: no network is involved, so its message
    says what to do itself (no tunnel to check)."""


class Timeout(ClientError):
    """The server did not answer in time."""


class ReadOnlyError(ClientError):
    """A change asked of a client opened read-only (`--readonly`): refused before sending."""


class IncompleteListError(ClientError):
    """A whole list was asked for, but it could not be read whole (see paging.read_whole)."""


class BadResponse(ClientError):
    """The server answered 2xx with something that is not the API's JSON."""


class ApiError(ClientError):
    """The server answered with an error status."""

    def __init__(self, status: int, detail: str, message: str) -> None:
        super().__init__(message, detail=detail)
        self.status = status


class BadRequestError(ApiError):
    """400: the server refused the input."""


class AuthError(ApiError):
    """401: no key, or the key was refused (`key_sent`: a retry sends the same one)."""

    key_sent: bool = False


class ForbiddenError(ApiError):
    """403: e.g. a read-only local store."""


class NotFoundError(ApiError):
    """404: no such run or checkpoint (or not yours)."""


class ConflictError(ApiError):
    """409: e.g. publishing a checkpoint that is already public."""


class RateLimitedError(ApiError):
    """429 after every retry; `retry_after` is the server's last hint in seconds, if any."""

    def __init__(
        self, status: int, detail: str, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(status, detail, message)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx after every retry."""


class InsufficientStorageError(ServerError):
    """507: the server's disk had no room for the change (full, over quota, read-only); the
    change was not made, and trying again will not help until space is freed."""


def library_text(exc: BaseException) -> str:
    """A library's (httpx, h11, the OS) words for `exc`, fit to show: every quoted value cut
    out (h11 quotes the header it refused, key and all), control characters escaped, and
    the length bounded ("" when it has none)."""
    text = _QUOTED.sub("…", str(exc))
    text = ascii(text)[1:-1] if not text.isprintable() else text
    return text[:_MAX_LIBRARY_TEXT].strip()


def decoded(
    response: httpx.Response, decoder: msgspec.json.Decoder[T], url: str, subject: str
) -> T:
    """A 2xx answer's bytes decoded into an API type; BadResponse naming what was wrong."""
    try:
        return decoder.decode(response.content)
    except msgspec.ValidationError as exc:
        message = f"{url} answered {subject} in an unexpected shape: {exc}"
        raise BadResponse(message, detail=str(exc)) from None
    except msgspec.DecodeError:
        message = f"{url} answered {subject} with no JSON object"
        raise BadResponse(message, detail=response.text[:_MAX_BODY_IN_MESSAGE]) from None


def detail_of(body: bytes, reason: str) -> str:
    """The `detail` of a JSON error body; else the body's text (shortened); else the reason."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data: Any = json.loads(text) if text else None
    except ValueError:
        data = None
    if isinstance(data, dict) and "detail" in data:
        detail = data["detail"]
        return detail if isinstance(detail, str) else json.dumps(detail)
    if text:
        return text[:_MAX_BODY_IN_MESSAGE]
    return reason


def api_error(
    status: int,
    detail: str,
    *,
    url: str,
    subject: str,
    credential: str | None,
    retry_after: float | None = None,
    reading: bool = False,
) -> ApiError:
    """The typed error for an error status, with a message that names what went wrong
    (`reading`: the request changes nothing, so a 409 is no refused change)."""
    if status == 401:
        refused = AuthError(status, detail, _auth_message(detail, url, credential))
        refused.key_sent = credential is not None
        return refused
    if status == 429:
        message = f"{url} is rate limiting requests ({detail}); wait a moment and try again"
        return RateLimitedError(status, detail, message, retry_after)
    if status == 507:
        message = f"{url} has no room on its disk to change {subject} (HTTP 507): {detail}"
        return InsufficientStorageError(status, detail, message)
    if status >= 500:
        message = f"{url} failed while handling {subject} (HTTP {status}): {detail}"
        return ServerError(status, detail, message)
    kinds: dict[int, tuple[type[ApiError], str]] = {
        400: (BadRequestError, f"{subject} was refused as bad input: {detail}"),
        403: (ForbiddenError, f"{subject} is not allowed: {detail}"),
        404: (NotFoundError, f"{subject} was not found at {url}: {detail}"),
        409: (
            ConflictError,
            f"{subject} could not be read: {detail}"
            if reading
            else f"{subject} cannot be changed: {detail}",
        ),
    }
    cls, message = kinds.get(status, (ApiError, f"{subject} failed (HTTP {status}): {detail}"))
    return cls(status, detail, message)


def _auth_message(detail: str, url: str, credential: str | None) -> str:
    if credential is None:
        return (
            f"{url} needs an API key: {detail}. Give it one: --api-key, or api_key_env / "
            "api_key_file in the config file; for the Tinker connection also TINKER_API_KEY "
            "or `tinker auth login`"
        )
    return (
        f"{credential} was refused by {url}: {detail}. Put the right key there and start "
        "again: a retry (r) sends the same key"
    )
