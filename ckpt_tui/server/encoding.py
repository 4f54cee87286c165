"""JSON answers encoded with msgspec, straight from the API structs.

A page of `/checkpoints` is made of each checkpoint's JSON, which the store's index keeps until
the checkpoint changes (`EncodedCheckpointsPage`; the figures are at `CheckpointEntry.encoded`).
"""

from __future__ import annotations

from starlette.responses import Response

from ckpt_tui.api_types import encode


def json_response(value: object) -> Response:
    """A 200 answer whose body is `value` (an API struct, or plain JSON data) as JSON."""
    return Response(encode(value), media_type="application/json")
