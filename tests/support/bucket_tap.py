"""A bucket storage that counts what it reads and fails what a test names, over a real
bucket (moto): an `ObjectStorage` whose ranged reads are counted (requests, bytes) and whose
reads of chosen keys, or whose whole listing, fail as a cloud's would (StorageReadError)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.base import Entry, StorageReadError
from ckpt_tui.store.blobs.objects import ObjectStorage, key_of


class TappedBucket(ObjectStorage):
    reads: list[tuple[str, int, int]]
    """(key, start, bytes returned) of every ranged read."""
    failing_keys: set[str]
    failing_listing: bool
    listing_gate: threading.Event | None
    """When set to an event, the listing waits for it (a slow bucket the test controls)."""

    @classmethod
    def at(cls, url: str) -> TappedBucket:
        location = parse_location(url)
        assert location is not None
        plain = ObjectStorage.open(location)
        tapped = cls(plain._store, plain.url, plain.root)
        tapped.cache_scope = plain.cache_scope
        tapped.reads, tapped.failing_keys, tapped.failing_listing = [], set(), False
        tapped.listing_gate = None
        return tapped

    def read_range(self, path: str, start: int, length: int) -> bytes:
        key = key_of(path)
        if key in self.failing_keys:
            raise StorageReadError("the server answered 500 Internal Server Error (GET)")
        data = super().read_range(path, start, length)
        self.reads.append((key, start, len(data)))
        return data

    def read_many(
        self, wanted: Sequence[tuple[str, int, int]], in_flight: int
    ) -> dict[tuple[str, int], bytes]:
        """The read-ahead: the failing keys fail there too; the rest are counted."""
        kept = [item for item in wanted if item[0] not in self.failing_keys]
        found = super().read_many(kept, in_flight)
        self.reads.extend((key, start, len(data)) for (key, start), data in found.items())
        return found

    def list_all(self, expected: int | None = None) -> Iterator[tuple[str, Entry]]:
        if self.listing_gate is not None:
            self.listing_gate.wait()
        if self.failing_listing:
            raise StorageReadError("the server answered 503 Slow Down (GET)")
        return super().list_all(expected)

    def bytes_read(self, key: str) -> int:
        return sum(n for read_key, _, n in self.reads if read_key == key)
