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

import errno
import hashlib
import itertools
import os
import stat
from collections.abc import Generator, Iterator
from typing import BinaryIO, Protocol

import msgspec

from ckpt_tui.store.errors import InvalidRequestError, NotFoundError, StoreError
from ckpt_tui.store.files import strip_temp
from ckpt_tui.store.layout import checked_file_parts
from ckpt_tui.store.names import climbs
from ckpt_tui.store.trash import DIR_FLAGS, open_subdir

MAX_FILES = 10_000
MAX_DEPTH = 16
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
"""The store's own folder is opened as the user named it (a link there is theirs)."""
LINK_ON_THE_WAY = "a folder on the way is a symbolic link (never followed) or not a folder"


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


def strong_etag(identity: str) -> str:
    """A strong ETag (quoted) for a file's version, from what tells its versions apart."""
    return '"' + hashlib.sha256(identity.encode()).hexdigest()[:32] + '"'


class OpenedFile:
    """A `ServedFile` read from a descriptor (opened by `open_file`, without following links)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        info = os.fstat(handle.fileno())
        self.size = info.st_size
        self.etag = strong_etag(f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}")

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


def list_files(root: str, rel: str) -> list[CheckpointFile]:
    """Every regular file of the checkpoint at `rel` below the store's folder `root` (links
    and files still being written left out); for a checkpoint that is one file, that file."""
    top, single = _open_checkpoint(root, rel)
    try:
        if single is not None:
            with _open_regular(top, single, single) as handle:
                name = servable_name(single, f"{root}/{rel}")
                return [CheckpointFile(name, os.fstat(handle.fileno()).st_size)]
        return sorted(_walk(top, "", 0, itertools.count(1)), key=lambda item: item.name)
    except NotFoundError as exc:
        raise StoreError(f"cannot read checkpoint file {root}/{rel}: {exc}") from exc
    except OSError as exc:
        raise StoreError(f"cannot read checkpoint folder {root}/{rel}: {exc.strerror}") from exc
    finally:
        os.close(top)


def open_file(root: str, rel: str, name: str) -> BinaryIO:
    """`name` (a path inside the checkpoint at `rel` below the store's folder `root`) opened
    for reading, no link followed; for a checkpoint that is one file, `name` is that file's
    own name.

    NotFoundError when it is not one of the checkpoint's regular files.
    """
    parts = checked_file_parts(name)
    if len(parts) > MAX_DEPTH + 1:
        raise InvalidRequestError(f"file name {name!r} is deeper than {MAX_DEPTH} levels")
    top, single = _open_checkpoint(root, rel)
    if single is not None and parts != [single]:
        os.close(top)
        raise NotFoundError(f"no file {name!r} in this checkpoint")
    try:
        folder = _below(top, parts[:-1])
    except OSError as exc:
        raise NotFoundError(f"no file {name!r} in this checkpoint") from exc
    if folder is None:
        raise NotFoundError(f"no file {name!r} in this checkpoint")
    try:
        return _open_regular(folder, parts[-1], name)
    finally:
        os.close(folder)


def _open_checkpoint(root: str, rel: str) -> tuple[int, str | None]:
    """A descriptor of the checkpoint's folder and None; or, for a checkpoint that is one
    file, of the folder it is in and its name. Each part of `rel` below `root` (the store's
    own folder, opened as it was named) is opened without following links, so a folder
    swapped for a link anywhere on the way is refused, not followed. StoreError when the
    way cannot be walked."""
    if climbs(rel):
        raise StoreError(f"{rel!r} is not a checkpoint's path inside the store")
    *folders, last = rel.split("/")
    try:
        top = os.open(root, _ROOT_FLAGS)
    except OSError as exc:
        raise StoreError(f"cannot read the store's folder {root}: {exc.strerror}") from exc
    cannot = f"cannot read checkpoint folder {root}/{rel}"
    try:
        parent = _below(top, folders)
        if parent is None:
            raise StoreError(f"{cannot}: {LINK_ON_THE_WAY}")
    except OSError as exc:
        raise StoreError(f"{cannot}: {exc.strerror}") from exc
    try:
        folder = open_subdir(parent, last)
    except OSError as exc:
        os.close(parent)
        raise StoreError(f"{cannot}: {exc.strerror}") from exc
    if folder is None:
        return parent, last  # a checkpoint that is one file (or a link: refused on open)
    os.close(parent)
    return folder, None


def _below(fd: int, names: list[str]) -> int | None:
    """The folder reached from folder `fd` (closed here) through `names`, each opened with
    `open_subdir` (no link followed); None when one is a link or no folder. OSError when one
    cannot be opened."""
    for name in names:
        try:
            child = open_subdir(fd, name)
        finally:
            os.close(fd)
        if child is None:
            return None
        fd = child
    return fd


def _open_regular(dir_fd: int, name: str, shown: str) -> BinaryIO:
    """The regular file `name` in `dir_fd`, not a link and not still being written (its
    temporary name); NotFoundError naming `shown` otherwise."""
    try:
        handle = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotFoundError(f"{shown!r} is a symbolic link (never followed)") from exc
        raise NotFoundError(f"no file {shown!r} in this checkpoint") from exc
    if not stat.S_ISREG(os.fstat(handle).st_mode) or strip_temp(name)[1]:
        os.close(handle)
        raise NotFoundError(f"no file {shown!r} in this checkpoint (not a finished regular file)")
    return os.fdopen(handle, "rb")


def servable_name(name: str, where: str) -> str:
    """`name` (a file's path inside its checkpoint) if a download can be asked for it and
    write it (`checked_file_parts`), else StoreError naming the file at `where`: a name
    that cannot be served fails the whole listing, never leaves the file out unsaid."""
    try:
        parts = checked_file_parts(name)
    except InvalidRequestError as exc:
        raise StoreError(f"{where} cannot be downloaded: {exc}; copy it another way") from None
    if len(parts) > MAX_DEPTH + 1:
        raise StoreError(f"{where} cannot be downloaded: it is deeper than {MAX_DEPTH} folders")
    return name


def _walk(dir_fd: int, prefix: str, depth: int, counted: Iterator[int]) -> Iterator[CheckpointFile]:
    """The regular files below `dir_fd`; `counted` numbers them across the whole checkpoint."""
    if depth > MAX_DEPTH:
        raise StoreError(f"checkpoint folder is deeper than {MAX_DEPTH} levels at {prefix!r}")
    for name in sorted(os.listdir(dir_fd)):
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISREG(info.st_mode) and not strip_temp(name)[1]:
            if next(counted) > MAX_FILES:
                raise StoreError(f"checkpoint folder holds more than {MAX_FILES} files")
            yield CheckpointFile(servable_name(prefix + name, prefix + name), info.st_size)
        elif stat.S_ISDIR(info.st_mode):
            child = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            try:
                yield from _walk(child, f"{prefix}{name}/", depth + 1, counted)
            finally:
                os.close(child)
