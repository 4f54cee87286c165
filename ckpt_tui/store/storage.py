"""Storage failures (a full disk, an I/O error, a locked metadata file) as `StorageError`s.

A change that meets one is rolled back by the code that began it; these helpers only name the
failure in words a person can act on, and say whether trying again can help.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from ckpt_tui.store.errors import (
    StorageError,
    StorageFailedError,
    StorageFullError,
    StoreBusyError,
)

FULL_ERRNOS = {
    errno.ENOSPC: "the disk holding the store is full",
    errno.EDQUOT: "the store's disk quota is used up",
    errno.EROFS: "the store's file system is mounted read-only",
}
FAILED_ERRNOS = {errno.EIO: "the disk holding the store reported an I/O error"}
STORAGE_ERRNOS = frozenset(FULL_ERRNOS) | frozenset(FAILED_ERRNOS)

# SQLite's primary result codes (the low byte of `sqlite_errorcode`, Python 3.11+).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL = 5, 6, 8, 10, 13
_SQLITE_WORDS = (  # for Pythons without `sqlite_errorcode`: SQLite's own messages
    ("disk is full", _SQLITE_FULL),
    ("is locked", _SQLITE_BUSY),
    ("readonly database", _SQLITE_READONLY),
    ("disk i/o error", _SQLITE_IOERR),
)


def is_storage_failure(exc: BaseException) -> bool:
    """Whether `exc` is a failure of the disk or the metadata file (not a bug, not bad input)."""
    if isinstance(exc, OSError):
        return exc.errno in STORAGE_ERRNOS
    return isinstance(exc, sqlite3.OperationalError) and _sqlite_code(exc) is not None


def storage_error(exc: OSError | sqlite3.Error, doing: str) -> StorageError:
    """The StorageError for `exc`, met while `doing` ("deleting tinker://r/weights/a")."""
    if isinstance(exc, OSError):
        cause = exc.strerror or str(exc)
        if exc.errno in FULL_ERRNOS:
            return _full(f"{FULL_ERRNOS[exc.errno]} ({cause})", doing)
        reason = FAILED_ERRNOS.get(exc.errno or 0, "the disk holding the store failed")
        return _failed(f"{reason} ({cause})", doing)
    code = _sqlite_code(exc)
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StoreBusyError(
            f"{doing} failed: the store's metadata file is locked by another program ({exc}); "
            "nothing was changed: try again in a moment"
        )
    if code == _SQLITE_FULL:
        return _full(f"the disk holding the store is full ({exc})", doing)
    if code == _SQLITE_READONLY:
        return _full(f"the store's metadata file cannot be written ({exc})", doing)
    return _failed(f"the store's metadata file could not be written ({exc})", doing)


def _full(reason: str, doing: str) -> StorageFullError:
    return StorageFullError(
        f"{doing} failed: {reason}; nothing was changed: free some space (or make the disk "
        "writable) and try again"
    )


def _failed(reason: str, doing: str) -> StorageFailedError:
    return StorageFailedError(
        f"{doing} failed: {reason}; nothing was changed: check the disk before trying again"
    )


def _sqlite_code(exc: sqlite3.Error) -> int | None:
    """SQLite's primary result code for a storage failure, else None."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        primary = code & 0xFF
        known = (_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL)
        return primary if primary in known else None
    text = str(exc).lower()
    return next((value for words, value in _SQLITE_WORDS if words in text), None)


@contextmanager
def storage_errors(doing: str) -> Iterator[None]:
    """Turn storage failures inside the block into StorageErrors that name `doing`."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        if not is_storage_failure(exc):
            raise
        raise storage_error(exc, doing) from exc
