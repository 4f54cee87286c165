"""JSON bodies for checkpoint lists, with each checkpoint encoded once.

Turning a 1000-item page into JSON was most of the server's CPU per request. The store hands
out the same `Checkpoint` object until that checkpoint changes, so its encoded bytes can be
kept beside it and reused; a changed checkpoint is a new object and is encoded again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response

from ckpt_tui.api_types import Checkpoint

MAX_CACHED = 250_000


class CheckpointEncoder:
    """Encodes checkpoints, caching by object identity (the object is held, so ids stay unique)."""

    def __init__(self, max_cached: int = MAX_CACHED) -> None:
        self.max_cached = max_cached
        self._cache: dict[int, tuple[Checkpoint, bytes]] = {}
        self._lock = threading.Lock()

    def encode(self, checkpoint: Checkpoint) -> bytes:
        hit = self._cache.get(id(checkpoint))
        if hit is not None and hit[0] is checkpoint:
            return hit[1]
        data = json.dumps(checkpoint.to_json(), separators=(",", ":")).encode()
        with self._lock:
            if len(self._cache) >= self.max_cached:
                self._cache.clear()  # simple and bounded; a full page refills it at once
            self._cache[id(checkpoint)] = (checkpoint, data)
        return data

    def list_body(self, checkpoints: Sequence[Checkpoint], cursor: dict[str, Any] | None) -> bytes:
        """`{"checkpoints": [...], "cursor": ...}` as bytes."""
        items = b",".join(self.encode(checkpoint) for checkpoint in checkpoints)
        tail = json.dumps(cursor, separators=(",", ":")).encode()
        return b'{"checkpoints":[' + items + b'],"cursor":' + tail + b"}"


def json_bytes_response(body: bytes) -> Response:
    return Response(body, media_type="application/json")
