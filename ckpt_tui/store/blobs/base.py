"""The storage interface discovery and the bucket store read through (see the package)."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from ckpt_tui.store.settle import FINGERPRINT_VERSION, TEMP_SUFFIXES, FilesLook


class StorageReadError(OSError):
    """A list or read that failed (not an absence): its `strerror` says why, in words."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.strerror = why


@dataclass(frozen=True)
class Entry:
    """One child of a listed level: a folder (a common prefix on a bucket) or a file."""

    name: str
    is_dir: bool
    size: int = 0
    mtime_ns: int = 0
    tag: str = ""
    """What changes when the file is replaced under the same name (an ETag, an inode)."""


class Storage(Protocol):
    """A tree of folders and files. Paths are strings joined with `/` (`os.path.join` on
    POSIX); `root` is the store's own folder in it."""

    @property
    def url(self) -> str:
        """Where it is, for people: a folder's path or `s3://bucket/prefix` (no secrets)."""
        ...

    @property
    def root(self) -> str: ...

    def list_level(self, path: str) -> dict[str, Entry]:
        """The folders and files directly in `path` (every page); OSError when it fails."""
        ...

    def stat(self, path: str) -> Entry | None:
        """The file at `path`, None when there is none; OSError when it cannot be told."""
        ...

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """At most `length` bytes of the file from `start` (fewer at its end)."""
        ...

    def delete_batch(self, paths: Sequence[str]) -> dict[str, str | None]:
        """Delete files; path -> None (deleted or already gone) or why it was not."""
        ...


class RangedFile(io.RawIOBase):
    """A file of a storage read by ranged reads: what `zipfile` and the safetensors header
    reader need (seek, tell, read), fetching only the bytes asked for."""

    def __init__(self, storage: Storage, path: str, size: int) -> None:
        super().__init__()
        self._storage = storage
        self._path = path
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self._size - self._pos)
        if want <= 0:
            return 0
        data = self._storage.read_range(self._path, self._pos, want)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def open_ranged(storage: Storage, path: str) -> BinaryIO:
    """A storage's file opened for ranged reads (buffered, so small reads share a request);
    FileNotFoundError when there is none."""
    found = storage.stat(path)
    if found is None or found.is_dir:
        raise FileNotFoundError(2, "No such file", path)
    return io.BufferedReader(RangedFile(storage, path, found.size), buffer_size=64 * 1024)


def look_in(storage: Storage, path: str, single_file: bool) -> FilesLook | None:
    """One look at a checkpoint's files on a storage (see `settle.look_at`): their size, a
    fingerprint of names, sizes and tags (ETags), the newest time and a temporary name; None
    when nothing is there. A level that cannot be listed is `unread` (the size may miss files)."""
    digest = hashlib.blake2b(digest_size=16)
    if single_file:
        found = storage.stat(path)
        if found is None:
            return None
        digest.update(f"{found.size}:{found.tag}:{found.mtime_ns}".encode())
        temp = os.path.basename(path) if _is_temp(os.path.basename(path)) else None
        return FilesLook(found.size, _fingerprint(digest), found.mtime_ns, temp)
    size = newest = 0
    temp_name = unread = None
    stack, seen = [(path, "")], 0
    while stack:
        folder, rel = stack.pop()
        try:
            listing = storage.list_level(folder)
        except OSError as exc:
            unread = unread or f"{rel or 'the folder'} cannot be read: {exc.strerror or exc}"
            continue
        for name in sorted(listing):
            entry, child = listing[name], f"{rel}/{name}" if rel else name
            seen += 1
            if entry.is_dir:
                stack.append((os.path.join(folder, name), child))
                continue
            size += entry.size
            newest = max(newest, entry.mtime_ns)
            temp_name = temp_name or (child if _is_temp(name) else None)
            digest.update(f"{child}:{entry.size}:{entry.tag}:{entry.mtime_ns}\n".encode())
    if not seen and unread is None:
        return None
    return FilesLook(size, _fingerprint(digest), newest, temp_name, unread)


def _is_temp(name: str) -> bool:
    return any(name.endswith(s) and len(name) > len(s) for s in TEMP_SUFFIXES)


def _fingerprint(digest: Any) -> str:
    return FINGERPRINT_VERSION + str(digest.hexdigest())
