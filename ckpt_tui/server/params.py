"""Reading and checking what a request carries: query parameters, JSON bodies, path parts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.requests import Request

from ckpt_tui.api_types import TinkerPath
from ckpt_tui.server.error_responses import ApiError
from ckpt_tui.store.names import check_run_id, split_checkpoint_id

MAX_LIMIT = 10_000
"""Largest page the server returns; a larger `limit` is cut to this (the cursor says so)."""

MAX_BODY_BYTES = 64 * 1024
"""Every request body of this API is a few bytes of JSON; anything bigger is refused (413)."""

MAX_QUERY_INT = 2**63 - 1
"""Largest offset or limit accepted (SQLite's integers); anything longer is refused (400)."""

ACCESS_SCOPES = ("owned", "accessible")
CHECKPOINT_ACTIONS = ("publish", "ttl", "external_weights_urls")


@dataclass(frozen=True)
class Page:
    """The `offset` and `limit` of a list request."""

    offset: int
    limit: int


def _non_negative_int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    text = raw.strip()
    if not text.isdigit() or not text.isascii():
        shown = raw if len(raw) <= 40 else f"{raw[:40]}... ({len(raw)} characters)"
        raise ApiError(
            400, f"query parameter {name!r} must be a non-negative integer, got {shown!r}"
        )
    if len(text.lstrip("0")) > len(str(MAX_QUERY_INT)) or int(text) > MAX_QUERY_INT:
        raise ApiError(400, f"query parameter {name!r} must be at most {MAX_QUERY_INT}")
    return int(text)


def parse_page(request: Request, default_limit: int) -> Page:
    """`offset` and `limit` from the query; a limit above MAX_LIMIT is cut to MAX_LIMIT."""
    offset = _non_negative_int(request, "offset", 0)
    limit = _non_negative_int(request, "limit", default_limit)
    return Page(offset=offset, limit=min(limit, MAX_LIMIT))


def check_access_scope(request: Request) -> None:
    """Accept the SDK's `access_scope`; locally every run is both owned and accessible."""
    scope = request.query_params.get("access_scope")
    if scope is not None and scope not in ACCESS_SCOPES:
        allowed = " or ".join(ACCESS_SCOPES)
        raise ApiError(400, f"access_scope must be {allowed}, got {scope!r}")


def project_id(request: Request) -> str | None:
    """The optional `project_id` filter of the run list; an empty one is refused."""
    value = request.query_params.get("project_id")
    if value is not None and not value.strip():
        raise ApiError(400, "query parameter 'project_id' must not be empty (leave it out)")
    return value


def path_run_id(request: Request) -> str:
    """The `{run_id}` of the path, checked so it cannot escape the store (and the whole path
    checked to be UTF-8, which holds the checkpoint id too)."""
    _check_utf8_path(request)
    return check_run_id(str(request.path_params["run_id"]))


def _check_utf8_path(request: Request) -> None:
    """400 for a path whose %XX escapes are not UTF-8 (`%ED%A0%80`, a lone surrogate): the
    server would otherwise see U+FFFD in their place and look for a name nobody gave."""
    raw = request.scope.get("raw_path")
    if not isinstance(raw, bytes):
        return
    try:
        unquote_to_bytes(raw.partition(b"?")[0]).decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(
            400,
            "the URL's path is not UTF-8 once its %XX escapes are decoded (e.g. %ED%A0%80, a "
            "lone surrogate): give run ids and checkpoint names as UTF-8",
        ) from None


def split_checkpoint_tail(tail: str) -> tuple[str, str | None]:
    """Split `SEGMENT/NAME[/ACTION]` (what follows `/checkpoints/`) into id and action.

    A checkpoint id always has exactly one slash, so `weights/publish` is a checkpoint named
    `publish`, while `weights/0001/publish` is the publish action on `weights/0001`.
    """
    parts = tail.split("/")
    if len(parts) == 3 and parts[2] in CHECKPOINT_ACTIONS:
        checkpoint_id = f"{parts[0]}/{parts[1]}"
        action: str | None = parts[2]
    elif len(parts) == 2:
        checkpoint_id, action = tail, None
    else:
        raise ApiError(
            404,
            f"no such endpoint: {tail!r} is not SEGMENT/NAME, SEGMENT/NAME/publish "
            "SEGMENT/NAME/ttl or SEGMENT/NAME/external_weights_urls",
        )
    split_checkpoint_id(checkpoint_id)
    return checkpoint_id, action


async def read_json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object; 400 when it is not one, 413 when it is too big."""
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            raise ApiError(413, f"request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        data = json.loads(bytes(body))
    except RecursionError:
        raise ApiError(400, "request body is nested too deeply to be this API's JSON") from None
    except ValueError as exc:  # also bad UTF-8, and integers of more than 4,300 digits
        raise ApiError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, f"request body must be a JSON object, got {type(data).__name__}")
    return data


def parse_ttl_body(data: dict[str, Any]) -> int | None:
    """`{"ttl_seconds": int | null}`: an integer number of seconds, or null to remove the TTL."""
    if "ttl_seconds" not in data:
        raise ApiError(400, 'body must be {"ttl_seconds": <seconds> or null}')
    ttl = data["ttl_seconds"]
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int):
        raise ApiError(
            400, f"ttl_seconds must be an integer number of seconds or null, got {ttl!r}"
        )
    return ttl


def parse_tinker_path_body(data: dict[str, Any]) -> TinkerPath:
    """`{"tinker_path": "tinker://RUN/SEGMENT/NAME"}`, parsed and checked for safety."""
    raw = data.get("tinker_path")
    if not isinstance(raw, str):
        raise ApiError(400, 'body must be {"tinker_path": "tinker://RUN/SEGMENT/NAME"}')
    try:
        path = TinkerPath.parse(raw)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from exc
    check_run_id(path.run_id)
    split_checkpoint_id(path.checkpoint_id)
    return path
