"""What tells two bucket stores apart while a bucket keeps no store id of its own.

A bucket keeps its id in `.ckpt-tui/store.json` once ckpt-tui changed it (`BucketMeta`).
Before that, a store reports `listed_id`: an id from what the bucket holds, so one bucket
reached at two endpoints (directly and through a proxy, or at two names of one server) is
one store to every command, looks included, and looking still writes nothing. Only when
the prefix holds no object, or its listing failed, does the id come from the location and
its endpoint (`bucket_id`).
"""

from __future__ import annotations

import hashlib

from ckpt_tui.store.blobs.base import Entry
from ckpt_tui.store.blobs.objects import ObjectStorage


def bucket_id(storage: ObjectStorage) -> str:
    """The id of a bucket store whose objects were not listed (or that holds none): from its
    location and where it is served from (`ObjectStorage.place_scope`), so one bucket name
    at two endpoints is two stores, and two spellings of one endpoint are one. A bucket at
    the cloud's own endpoint keeps the id it always had."""
    where = f"\0{storage.place_scope}" if storage.place_scope else ""
    return hashlib.sha256(f"bucket\0{storage.url}{where}".encode()).hexdigest()[:32]


def listed_id(storage: ObjectStorage, first: tuple[str, Entry] | None) -> str:
    """The id of a listed bucket store: its location (without the endpoint) and its first
    object (`ListedTree.first_object`): key, size, ETag and time. Two endpoints of one
    bucket list the same first object. Two buckets of one name at two servers differ in it
    unless they hold the same bytes under the same first key written in the same second
    (S3 keeps times to the second or the millisecond); they are then taken as one store,
    which refuses, never acts, and keeping an id in either (any change through ckpt-tui)
    tells them apart."""
    if first is None:
        return bucket_id(storage)
    key, entry = first
    seen = f"listed\0{storage.url}\0{key}\0{entry.size}\0{entry.tag}\0{entry.mtime_ns}"
    return hashlib.sha256(seen.encode()).hexdigest()[:32]
