"""Careful file access for the store and discovery: regular files only, bounded reads, no links
followed.

Discovery looks at folders a training job may still be writing, so nothing here blocks (a FIFO
named `model.pt` is refused, not opened for a blocking read) or reads more than it must.

A walk over a bucket (`reading_from`) sends these reads to its storage instead (`store/blobs`):
listings come from the bucket, files are read with ranged GETs, with the same bounds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, BinaryIO

from ckpt_tui import regular_files
from ckpt_tui.bounded_json import MAX_JSON_BYTES, parse_json_object
from ckpt_tui.store.blobs.base import Storage, look_in, open_ranged
from ckpt_tui.store.settle import TEMP_SUFFIXES, FilesLook, look_at

MAX_SMALL_FILE = 64 * 1024 * 1024
"""The most discovery reads of any one file (a pickle, a trainer_state.json, an index)."""

DIR, FILE = "dir", "file"

_walk_storage: ContextVar[Storage | None] = ContextVar("walk_storage", default=None)
"""The storage the walk in progress reads (None: the file system)."""


@contextmanager
def reading_from(storage: Storage) -> Iterator[None]:
    """Send this module's reads to `storage` (a bucket) until the block ends."""
    token = _walk_storage.set(storage)
    try:
        yield
    finally:
        _walk_storage.reset(token)


def on_storage() -> bool:
    """Whether reads go to a storage other than the file system (see `reading_from`)."""
    return _walk_storage.get() is not None


def open_regular(path: str) -> BinaryIO:
    """Open a regular file for reading without following a final link or blocking on a FIFO
    (on a bucket: an object, read by ranged GETs)."""
    storage = _walk_storage.get()
    if storage is not None:
        return open_ranged(storage, path)
    return regular_files.open_regular(path, follow_links=False)


def size_of(handle: BinaryIO) -> int:
    """The size of an opened file (a descriptor's or a ranged object's), positioned at 0."""
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    return size


def read_capped(path: str, cap: int = MAX_SMALL_FILE) -> bytes:
    """The whole of a regular file of at most `cap` bytes; OSError or ValueError otherwise."""
    with open_regular(path) as handle:
        size = size_of(handle)
        if size > cap:
            raise ValueError(f"{os.path.basename(path)} is {size} bytes, over the {cap} byte limit")
        return handle.read(cap + 1)[:cap]


def read_json(path: str) -> dict[str, Any]:
    """A JSON object from a file, bounded (`bounded_json`); OSError or ValueError otherwise."""
    return parse_json_object(read_capped(path, MAX_JSON_BYTES), os.path.basename(path))


def list_dir(path: str) -> dict[str, str]:
    """name -> "dir" or "file" for the real folders and regular files in `path` (no links)."""
    storage = _walk_storage.get()
    if storage is not None:
        return {e.name: DIR if e.is_dir else FILE for e in storage.list_level(path).values()}
    found: dict[str, str] = {}
    with os.scandir(path) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    found[entry.name] = DIR
                elif entry.is_file(follow_symlinks=False):
                    found[entry.name] = FILE
            except OSError:
                continue
    return found


def strip_temp(name: str) -> tuple[str, bool]:
    """(`name` without a temporary-write suffix, whether it had one)."""
    for suffix in TEMP_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], True
    return name, False


def temp_files(listing: dict[str, str]) -> list[str]:
    """The names in a listing that say a write is still going on."""
    return sorted(name for name in listing if strip_temp(name)[1])


def lstat_or_none(path: str) -> os.stat_result | None:
    """The file system's lstat of `path`; None when it fails or reads go to a bucket (which
    has no folders to stat: the walk then goes by its objects' times, `look_here`)."""
    if _walk_storage.get() is not None:
        return None
    try:
        return os.lstat(path)
    except OSError:
        return None


def stored_stamp(path: str) -> str | None:
    """On a bucket (`reading_from`): what the object at `path` is, `size:ETag:time`; None when
    there is none, it has no ETag (then its contents cannot be told by the listing), or reads
    go to the file system."""
    storage = _walk_storage.get()
    found = None if storage is None else storage.stat(path)
    if found is None or found.is_dir or not found.tag:
        return None
    return f"{found.size}:{found.tag}:{found.mtime_ns}"


def look_here(path: str, single_file: bool) -> tuple[int, FilesLook] | None:
    """(the mtime of a checkpoint's file or folder, one look at its files); None when gone.
    On a bucket the mtime is its newest object's."""
    storage = _walk_storage.get()
    if storage is None:
        st = lstat_or_none(path)
        return None if st is None else (st.st_mtime_ns, look_at(path, st))
    look = look_in(storage, path, single_file)
    return None if look is None else (look.newest_ns, look)
