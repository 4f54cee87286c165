"""A bucket prefix listed once: every object under it (its first levels' prefixes listed
side by side, each flat in pages of 1,000: `ObjectStorage.list_all`), answering `list_level`
and `stat` from memory; file reads go to the bucket, the starts the walk reads ahead kept in
the local cache (`read_cache`) with what the walk found in them. Listing 30,000 objects is
some 50 requests, most at the same time, where a walk level by level is one per folder. The
listing is all or nothing: a request that fails fails it (never a partial tree).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence

from ckpt_tui.store.blobs.base import Entry, StorageReadError
from ckpt_tui.store.blobs.objects import MAX_LISTED, ObjectStorage, key_of
from ckpt_tui.store.bucket.place import META_FOLDER
from ckpt_tui.store.bucket.read_cache import ReadCache
from ckpt_tui.store.discover.known import Finding, Known
from ckpt_tui.store.layout import RUN_JSON, RUNS_DIR

READ_AHEAD = 64 * 1024
"""The start of a file read ahead: what the walk's first read of it asks for (a buffered
reader's block), so that read is answered from memory."""
READ_AHEAD_BUDGET = 128 * 1024 * 1024
"""The most bytes one look reads ahead; past it, files are read when the walk asks."""
# Under `runs/` (the Tinker layout) only run.json is read whole: a checkpoint's config is not.
READ_AHEAD_IN_FLIGHT = 64
WHOLE_FILES = frozenset(
    {"trainer_state.json", "config.json", "adapter_config.json", "run.json", "latest", ".metadata"}
)
HEADER_SUFFIXES = (".safetensors", ".index.json")


class ListedTree:
    """A `Storage` answering listings from one flat listing of `bucket`'s root."""

    def __init__(
        self,
        bucket: ObjectStorage,
        objects: Iterable[tuple[str, Entry]],
        cache: ReadCache | None = None,
    ) -> None:
        self._bucket = bucket
        self._cache = cache
        self._levels: dict[str, dict[str, Entry]] = {}
        self._files: dict[str, Entry] = {}
        self._ahead: dict[tuple[str, int], bytes] = {}
        self._wanted: dict[str, tuple[str, int, int]] = {}
        self._fresh = False
        """Whether the read-ahead read anything from the bucket (the cache lacked it)."""
        for key, entry in objects:
            self._add(key, entry)
        self._drop_folder_markers()

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

    def _drop_folder_markers(self) -> None:
        """Zero-byte keys ending in `/` (the S3 console's "Create folder" writes them) are
        listed by obstore without their `/`: the one of a folder that holds objects, or of
        the root, is that folder, not a file (an empty folder's stays a zero-byte file: from
        the listing alone it is one)."""
        markers = [
            key
            for key, entry in self._files.items()
            if entry.size == 0 and (key in self._levels or key == self.root)
        ]
        for key in markers:
            del self._files[key]

    @property
    def url(self) -> str:
        return self._bucket.url

    @property
    def root(self) -> str:
        return self._bucket.root

    @property
    def object_count(self) -> int:
        return len(self._files)

    def fingerprint(self) -> str:
        """What every object is (key, size, ETag, time): equal while nothing changed."""
        digest = hashlib.blake2b(digest_size=16)
        for key in sorted(self._files):
            entry = self._files[key]
            digest.update(f"{key}\0{entry.size}\0{entry.tag}\0{entry.mtime_ns}\n".encode())
        return digest.hexdigest()

    def first_object(self) -> tuple[str, Entry] | None:
        """The object whose key sorts first, leaving out the store's own documents (the
        store writes those as it looks); None when there is none."""
        own = join(self.root, META_FOLDER) + "/"
        keys = (key for key in self._files if not key.startswith(own))
        first = min(keys, default=None)
        return None if first is None else (first, self._files[first])

    def list_level(self, path: str) -> dict[str, Entry]:
        return dict(self._levels.get(key_of(path), {}))

    def stat(self, path: str) -> Entry | None:
        return self._files.get(key_of(path))

    def read_range(self, path: str, start: int, length: int) -> bytes:
        key = key_of(path)
        ahead = self._ahead.get((key, start)) if start == 0 else None
        if ahead is not None and (len(ahead) >= length or len(ahead) == self._size(key)):
            return ahead[:length]
        return self._bucket.read_range(path, start, length)

    def _size(self, key: str) -> int:
        found = self._files.get(key)
        return -1 if found is None else found.size

    def read_ahead(self) -> int:
        """Read the start of every file the walk will read (JSON it reads whole, safetensors
        headers), many at once: a walk then waits for no request of these. Returns the bytes
        read ahead. Nothing read here is trusted more than a read the walk makes itself: a
        failed one is simply read again (and its failure recorded) when the walk asks.
        Starts kept in the local cache for the same ETag and size are not read again."""
        wanted: dict[str, tuple[str, int, int]] = {}
        budget = READ_AHEAD_BUDGET
        tinker = f"{self.root}/{RUNS_DIR}/" if self.root else f"{RUNS_DIR}/"
        for key, entry in self._files.items():
            name = key.rsplit("/", 1)[-1]
            whole = name == RUN_JSON if key.startswith(tinker) else name in WHOLE_FILES
            if entry.size and (whole or name.endswith(HEADER_SUFFIXES)):
                length = min(entry.size, READ_AHEAD)
                if length > budget:
                    break
                budget -= length
                wanted[key] = (entry.tag, entry.size, length)
        kept = self._cache.load(wanted) if self._cache is not None else {}
        missing = [(key, 0, want[2]) for key, want in wanted.items() if key not in kept]
        fresh = self._bucket.read_many(missing, READ_AHEAD_IN_FLIGHT) if missing else {}
        self._ahead = {**{(key, 0): data for key, data in kept.items()}, **fresh}
        self._wanted, self._fresh = wanted, bool(fresh)
        return READ_AHEAD_BUDGET - budget

    def kept_findings(self) -> dict[str, Finding]:
        """What the walk found before in this bucket's files, as the local cache kept it."""
        return self._cache.findings() if self._cache is not None else {}

    def keep(self, known: Known | None) -> None:
        """Save in the local cache what this look read ahead and what its walk found
        (`known.used`), when either is new (a read, a finding learned or one dropped), or
        how many objects it listed is. None: no walk to go by (it was stopped or failed):
        the reads, with the findings the cache kept. Findings are kept only while every
        object has an ETag: without one, a file rewritten at the same size within the same
        second looks unchanged."""
        if self._cache is None:
            return
        if known is None:
            found: Mapping[str, Finding] = self._cache.findings()
            new = self._fresh
        else:
            dropped = len(known.used) != len(known.before)  # used: of before, or learned
            found, new = known.used, bool(self._fresh or known.learned or dropped)
        if new or self._cache.listed_before != len(self._files):
            data = {key: data for (key, _), data in self._ahead.items()}
            tagged = all(entry.tag for entry in self._files.values())
            found = found if tagged else {}
            self._cache.save(self._wanted, data, found, len(self._files))

    def delete_batch(self, paths: Sequence[str]) -> dict[str, str | None]:
        return self._bucket.delete_batch(paths)


def join(root: str, *names: str) -> str:
    """A path under a storage root ("" for a bucket's top)."""
    return os.path.join(root, *names) if root else "/".join(names)


def list_tree(bucket: ObjectStorage, listed_before: int | None = None) -> ListedTree:
    """Every object under `bucket`'s root, listed now; StorageReadError when a page fails or
    there are more than MAX_LISTED. `listed_before`: how many objects this process's last
    look listed (how to list, `ObjectStorage.list_all`); None (a first look): the count
    the local cache kept, read now (a later look reads the cache file only to walk)."""
    scope = bucket.cache_scope
    cache = ReadCache(scope) if scope is not None else None
    if listed_before is None and cache is not None:
        listed_before = cache.listed_before
    objects = []
    for item in bucket.list_all(listed_before):
        objects.append(item)
        if len(objects) > MAX_LISTED:
            raise StorageReadError(f"more than {MAX_LISTED:,} objects under {bucket.url}")
    return ListedTree(bucket, objects, cache)
