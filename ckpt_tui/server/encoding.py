"""JSON answers encoded with msgspec, straight from the API structs.

msgspec encodes a 1,000-checkpoint page in well under a millisecond, so no per-checkpoint cache
of encoded bytes is kept.
"""

from __future__ import annotations

from starlette.responses import Response

from ckpt_tui.api_types import encode


def json_response(value: object) -> Response:
    """A 200 answer whose body is `value` (an API struct, or plain JSON data) as JSON."""
    return Response(encode(value), media_type="application/json")
