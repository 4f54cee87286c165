"""Reading a checkpoint's files out of the store: what they are, and each opened safely.

A checkpoint's folder is walked and its files opened one directory descriptor at a time with
O_NOFOLLOW, so a link planted anywhere inside it (or a folder swapped for one between the
listing and the read) is never followed out of the store. Bounded: at most MAX_FILES files,
MAX_DEPTH folders deep. A checkpoint that is one file (a `torch.save` file) is that one file,
under its own name.

What the server sends of a file is a `ServedFile`: its size, a strong ETag and its bytes, from
a descriptor here (`OpenedFile`) or from a bucket's object (`ckpt_tui.store.bucket.files`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Generator, Iterator
from typing import BinaryIO, Protocol

import msgspec

from ckpt_tui.store.errors import InvalidRequestError, NotFoundError, StoreError
from ckpt_tui.store.files import strip_temp
from ckpt_tui.store.layout import checked_file_parts

MAX_FILES = 10_000
MAX_DEPTH = 16
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class CheckpointFile(msgspec.Struct, frozen=True, gc=False):
    """One regular file of a checkpoint: its path inside the checkpoint folder and its size."""

    name: str
    size: int


class ServedFile(Protocol):
    """One file of a checkpoint, opened for sending: what `Content-Length`, `ETag` and the
    body of an answer are made of. The one who opened it closes it."""

    @property
    def size(self) -> int: ...

    @property
    def etag(self) -> str:
        """A strong ETag (quoted) that changes when the file is replaced or rewritten."""
        ...

    def chunks(self, start: int, end: int, chunk_bytes: int) -> Generator[bytes, None, None]:
        """The bytes [start, end), at most `chunk_bytes` at a time (each `next` may block:
        call it off the event loop). Fewer when the file shrank meanwhile, or an error
        (OSError, StoreError) when it can no longer be read as it was."""
        ...

    def close(self) -> None: ...


class OpenedFile:
    """A `ServedFile` read from a descriptor (opened by `open_file`, without following links)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        info = os.fstat(handle.fileno())
        self.size = info.st_size
        identity = f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
        self.etag = '"' + hashlib.sha256(identity.encode()).hexdigest()[:32] + '"'

    def chunks(self, start: int, end: int, chunk_bytes: int) -> Generator[bytes, None, None]:
        fd, offset = self._handle.fileno(), start
        while offset < end:
            chunk = os.pread(fd, min(chunk_bytes, end - offset), offset)
            if not chunk:
                return  # shrunk while served: the short body fails the client's length check
            offset += len(chunk)
            yield chunk

    def close(self) -> None:
        self._handle.close()


def list_files(folder: str) -> list[CheckpointFile]:
    """Every regular file under `folder` (links and files still being written left out);
    for a checkpoint that is one file, that file."""
    try:
        top = os.open(folder, _DIR_FLAGS)
    except NotADirectoryError:
        return [_single(folder)]
    except OSError as exc:
        raise StoreError(f"cannot read checkpoint folder {folder}: {exc.strerror}") from exc
    try:
        found = sorted(_walk(top, "", 0), key=lambda item: item.name)
    except OSError as exc:
        raise StoreError(f"cannot read checkpoint folder {folder}: {exc.strerror}") from exc
    finally:
        os.close(top)
    return found


def _walk(dir_fd: int, prefix: str, depth: int) -> Iterator[CheckpointFile]:
    if depth > MAX_DEPTH:
        raise StoreError(f"checkpoint folder is deeper than {MAX_DEPTH} levels at {prefix!r}")
    count = 0
    for name in sorted(os.listdir(dir_fd)):
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISREG(info.st_mode) and not strip_temp(name)[1]:
            count += 1
            if count > MAX_FILES:
                raise StoreError(f"checkpoint folder holds more than {MAX_FILES} files")
            yield CheckpointFile(prefix + name, info.st_size)
        elif stat.S_ISDIR(info.st_mode):
            child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            try:
                yield from _walk(child, f"{prefix}{name}/", depth + 1)
            finally:
                os.close(child)


def _single(path: str) -> CheckpointFile:
    """The checkpoint that is the one file at `path`, under its own name."""
    folder, name = os.path.split(path)
    try:
        handle = open_file(folder, name)
    except NotFoundError as exc:
        raise StoreError(f"cannot read checkpoint file {path}: {exc}") from exc
    with handle:
        return CheckpointFile(name, os.fstat(handle.fileno()).st_size)


def open_file(folder: str, name: str) -> BinaryIO:
    """`name` (a path inside the checkpoint `folder`) opened for reading, no link followed;
    for a checkpoint that is one file (`folder` is a file), `name` is that file's own name.

    NotFoundError when it is not one of the checkpoint's regular files.
    """
    parts = checked_file_parts(name)
    if len(parts) > MAX_DEPTH + 1:
        raise InvalidRequestError(f"file name {name!r} is deeper than {MAX_DEPTH} levels")
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except NotADirectoryError:
        parent, own_name = os.path.split(folder)
        if parts != [own_name]:
            raise NotFoundError(f"no file {name!r} in this checkpoint") from None
        return open_file(parent, own_name)
    try:
        for part in parts[:-1]:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        handle = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise NotFoundError(f"no file {name!r} in this checkpoint") from exc
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(handle).st_mode) or strip_temp(parts[-1])[1]:
        os.close(handle)
        raise NotFoundError(f"no file {name!r} in this checkpoint (not a finished regular file)")
    return os.fdopen(handle, "rb")
