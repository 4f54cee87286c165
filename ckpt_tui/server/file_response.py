"""Serving one already-opened file: `Range` (one range), `HEAD`, `Content-Length`, `ETag`.

The file is opened once (`ServedFile`): a folder's without following links, read from that
descriptor, so what is served is what was checked; a bucket's object by ranged reads that
hold to the version first seen (ckpt_tui.store.bucket.files). Several ranges in one request
get the whole file (RFC 9110 allows it); an `If-Range` that names another version gets it too.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ckpt_tui.server.error_responses import error_response
from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.export import ServedFile

logger = logging.getLogger("ckpt_tui.server")

CHUNK_BYTES = 1024 * 1024


class UnsatisfiableRange(ValueError):
    """A byte range that starts past the end of the file."""


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) byte of a single `bytes=` range, or None to send the whole file."""
    if header is None:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first_text, dash, last_text = spec.strip().partition("-")
    if not dash or not (first_text.isdigit() or last_text.isdigit()):
        return None
    if not first_text:  # the last N bytes
        length = int(last_text)
        if length == 0 or size == 0:
            raise UnsatisfiableRange(spec)
        return max(0, size - length), size - 1
    if not first_text.isdigit() or (last_text and not last_text.isdigit()):
        return None
    first = int(first_text)
    last = int(last_text) if last_text else size - 1
    if first >= size:
        raise UnsatisfiableRange(spec)
    if first > last:
        return None
    return first, min(last, size - 1)


def file_answer(request: Request, handle: ServedFile) -> Response:
    """The answer to GET or HEAD for `handle`'s file; the answer owns (closes) the handle."""
    size, etag = handle.size, handle.etag
    headers = {"ETag": etag, "Accept-Ranges": "bytes", "Cache-Control": "no-store"}
    if_range = request.headers.get("if-range")
    try:
        wanted = (
            None
            if if_range not in (None, etag)
            else parse_range(request.headers.get("range"), size)
        )
    except UnsatisfiableRange:
        handle.close()
        headers["Content-Range"] = f"bytes */{size}"
        return error_response(
            416, f"the range asked for is outside the file ({size} bytes)", headers
        )
    first, last, status = (0, size - 1, 200) if wanted is None else (*wanted, 206)
    if status == 206:
        headers["Content-Range"] = f"bytes {first}-{last}/{size}"
    headers["Content-Length"] = str(last - first + 1)
    if request.method == "HEAD":
        handle.close()
        return Response(status_code=status, headers=headers, media_type="application/octet-stream")
    body = _chunks(handle, first, last + 1)
    return StreamingResponse(body, status, headers, media_type="application/octet-stream")


async def _chunks(handle: ServedFile, start: int, end: int) -> AsyncIterator[bytes]:
    """The bytes [start, end) of the file, a chunk at a time, read off the event loop."""
    pieces = handle.chunks(start, end, CHUNK_BYTES)
    try:
        while (chunk := await run_in_threadpool(next, pieces, None)) is not None:
            yield chunk
    except (OSError, StoreError) as exc:
        # It can no longer be sent as it was (a bucket's object replaced meanwhile): the body
        # ends short, which the client's length check sees, as with a file that shrank.
        logger.warning("stopped sending a file: %s", exc)
    finally:
        pieces.close()
        handle.close()
