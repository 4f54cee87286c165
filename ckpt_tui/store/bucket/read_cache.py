"""The starts of a bucket's files read ahead (`tree.ListedTree.read_ahead`), and what the
walk found in them (`discover.known`), kept on this machine so that the next open reads again
only what changed, and examines again only the checkpoints whose objects changed.

Kept per bucket location (the endpoint and `s3://bucket/prefix`) in one file under the user's
cache folder (`$XDG_CACHE_HOME/ckpt-tui/bucket-reads/`, else `~/.cache/…`). A read is the
object's key, its ETag and size, and the bytes read from its start; it is used only for an
object listed now with the same ETag and size (a replaced object has a new ETag: it is read
again). A finding is a checkpoint's path, its key (the kind of examination and the fingerprint
of its objects' names, sizes, ETags and times, `settle.look_at`) and what was found; it is
used only where the walk makes the same key now (`Known.recall`, which also reads the files
again when a finding does not decode). Nothing here writes to the bucket.

The file is hostile input like any other: opened without following links, regular files only,
at most `MAX_CACHE_BYTES`, decoded into a typed struct, and every entry checked against the
listing; a file that is damaged, too big or of another version is ignored (everything is read
from the bucket, as on a first open) and replaced by the next save. A save that fails (a full
or read-only disk) is ignored too: the cache only saves requests, it is never the truth.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import msgspec

from ckpt_tui import regular_files
from ckpt_tui.store.blobs.objects import MAX_LISTED
from ckpt_tui.store.discover.known import Finding

CACHE_VERSION = 2
"""Raised whenever what is kept, or what a finding means, changes: an older file is ignored."""
MAX_CACHE_BYTES = 256 * 1024 * 1024
"""The largest cache file read or written: the read-ahead budget (128 MiB) and the keys, and
the findings (a few hundred bytes a checkpoint). A file that would be bigger is saved without
its findings."""
SAVING_PREFIX = ".saving-"
"""A save is written to `.saving-XXXX` beside the cache file, then renamed over it."""
STALE_SAVE_SECONDS = 3600
"""A `.saving-` file untouched this long was left by a process killed while saving (a save
takes seconds at most); the next save removes it, as it may hold up to `MAX_CACHE_BYTES`."""


class CachedRead(msgspec.Struct, array_like=True, frozen=True):
    key: str
    tag: str
    size: int
    data: bytes


class CachedFinding(msgspec.Struct, array_like=True, frozen=True):
    path: str
    key: str
    finding: bytes


class CacheFile(msgspec.Struct, frozen=True):
    version: int
    scope: str
    reads: list[CachedRead]
    found: list[CachedFinding] = []
    listed: int | None = None
    """How many objects the look that saved it listed (a file saved before: unknown)."""


Wanted = Mapping[str, tuple[str, int, int]]
"""key -> (ETag, object size, bytes wanted from its start)."""


def cache_home(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/ckpt-tui/bucket-reads`, else `~/.cache/ckpt-tui/bucket-reads`."""
    env = os.environ if environ is None else environ
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ckpt-tui" / "bucket-reads"


class ReadCache:
    """The cached starts of one bucket location's files (see the module)."""

    def __init__(self, scope: str, folder: Path | None = None) -> None:
        self.scope = scope
        name = hashlib.sha256(scope.encode()).hexdigest()[:32]
        self.path = (folder or cache_home()) / name

    def load(self, wanted: Wanted) -> dict[str, bytes]:
        """key -> bytes for each of `wanted` whose entry matches its ETag, size and length;
        nothing when the file is missing, damaged or not ours."""
        kept = self._file
        if kept is None:
            return {}
        hits: dict[str, bytes] = {}
        for read in kept.reads:
            want = wanted.get(read.key)
            if want is None or not read.tag or (read.tag, read.size) != want[:2]:
                continue
            if len(read.data) == want[2]:
                hits[read.key] = read.data
        return hits

    @property
    def listed_before(self) -> int | None:
        """How many objects the look that saved the file listed; None when unknown. Only
        how to list the bucket next goes by it (`ObjectStorage.list_all`), never what."""
        kept = self._file
        if kept is None or kept.listed is None or not 0 <= kept.listed <= MAX_LISTED:
            return None  # unknown, or not a count (the file is hostile input)
        return kept.listed

    def findings(self) -> dict[str, Finding]:
        """path -> (key, finding) as the last save kept them; nothing when the file is
        missing, damaged or not ours."""
        kept = self._file
        return {} if kept is None else {f.path: (f.key, f.finding) for f in kept.found}

    def save(
        self,
        wanted: Wanted,
        data: Mapping[str, bytes],
        found: Mapping[str, Finding],
        listed: int | None = None,
    ) -> None:
        """Keep `data` (key -> bytes) for the objects of `wanted` that have an ETag (only
        what was listed now: entries of objects gone are dropped), the walk's findings
        `found` (those it used now) and how many objects were `listed`. Failures are
        ignored."""
        reads = [
            CachedRead(key, want[0], want[1], data[key])
            for key, want in wanted.items()
            if want[0] and key in data and len(data[key]) == want[2]
        ]
        findings = [CachedFinding(path, key, finding) for path, (key, finding) in found.items()]
        raw = msgspec.msgpack.encode(CacheFile(CACHE_VERSION, self.scope, reads, findings, listed))
        if len(raw) > MAX_CACHE_BYTES:  # the reads save more requests than the findings
            raw = msgspec.msgpack.encode(CacheFile(CACHE_VERSION, self.scope, reads, [], listed))
        if len(raw) > MAX_CACHE_BYTES:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=SAVING_PREFIX)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(raw)
                os.replace(temp, self.path)
            except BaseException:
                os.unlink(temp)
                raise
            drop_stale_saves(self.path.parent)
        except OSError:
            return  # a cache that cannot be saved costs requests next time, nothing else

    @functools.cached_property
    def _file(self) -> CacheFile | None:
        """The cache file as read at the first use (one read per look)."""
        return self._read()

    def _read(self) -> CacheFile | None:
        try:
            with regular_files.open_regular(self.path, follow_links=False) as handle:
                raw = handle.read(MAX_CACHE_BYTES + 1)
        except OSError:
            return None
        if len(raw) > MAX_CACHE_BYTES:
            return None
        try:
            kept = msgspec.msgpack.decode(raw, type=CacheFile)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if kept.version != CACHE_VERSION or kept.scope != self.scope:
            return None
        return kept


def drop_stale_saves(folder: Path) -> None:
    """Remove the `.saving-` files in `folder` older than `STALE_SAVE_SECONDS` (regular
    files only, never through a link). A younger one may be another process's save in
    progress, so it stays."""
    oldest = time.time() - STALE_SAVE_SECONDS
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith(SAVING_PREFIX):
                continue
            try:
                found = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(found.st_mode) and found.st_mtime < oldest:
                    os.unlink(entry.path)
            except OSError:
                continue  # gone meanwhile, or not ours to remove: the next save tries again
