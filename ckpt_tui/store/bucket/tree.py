"""A bucket prefix listed once: every object under it, flat, in pages of 1,000 (ListObjectsV2
with continuation tokens), answering `list_level` and `stat` from memory; file reads go to the
bucket. One flat listing of 30,000 objects is 30 requests where a walk level by level is one
per folder. The listing is all or nothing: a page that fails fails it (never a partial tree).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from ckpt_tui.store.blobs.base import Entry, Storage, StorageReadError
from ckpt_tui.store.blobs.objects import ObjectStorage, key_of

MAX_LISTED = 2_000_000
"""The most objects one listing holds in memory (about 200 bytes each)."""


class ListedTree:
    """A `Storage` answering listings from one flat listing of `bucket`'s root."""

    def __init__(self, bucket: Storage, objects: Iterable[tuple[str, Entry]]) -> None:
        self._bucket = bucket
        self._levels: dict[str, dict[str, Entry]] = {}
        self._files: dict[str, Entry] = {}
        for key, entry in objects:
            self._add(key, entry)

    def _add(self, key: str, entry: Entry) -> None:
        self._files[key] = entry
        parent, _, name = key.rpartition("/")
        self._levels.setdefault(parent, {}).setdefault(name, entry)  # a folder wins
        while parent:  # every folder above it is a level of its parent's
            above, _, folder = parent.rpartition("/")
            level = self._levels.setdefault(above, {})
            if folder in level and level[folder].is_dir:
                break
            level[folder] = Entry(folder, True)
            parent = above

    @property
    def url(self) -> str:
        return self._bucket.url

    @property
    def root(self) -> str:
        return self._bucket.root

    @property
    def object_count(self) -> int:
        return len(self._files)

    def list_level(self, path: str) -> dict[str, Entry]:
        return dict(self._levels.get(key_of(path), {}))

    def stat(self, path: str) -> Entry | None:
        return self._files.get(key_of(path))

    def read_range(self, path: str, start: int, length: int) -> bytes:
        return self._bucket.read_range(path, start, length)

    def delete_batch(self, paths: Sequence[str]) -> dict[str, str | None]:
        return self._bucket.delete_batch(paths)


def join(root: str, *names: str) -> str:
    """A path under a storage root ("" for a bucket's top)."""
    return os.path.join(root, *names) if root else "/".join(names)


def list_tree(bucket: ObjectStorage) -> ListedTree:
    """Every object under `bucket`'s root, listed now; StorageReadError when a page fails or
    there are more than MAX_LISTED."""
    objects = []
    for item in bucket.list_all():
        objects.append(item)
        if len(objects) > MAX_LISTED:
            raise StorageReadError(f"more than {MAX_LISTED:,} objects under {bucket.url}")
    return ListedTree(bucket, objects)
