"""Errors the store raises; the server maps each to one HTTP status."""


class StoreError(Exception):
    """Base class; the message is shown to people as is, so it says what to do."""


class NotFoundError(StoreError):
    """No such run or checkpoint (HTTP 404)."""


def checkpoint_not_found(run_id: str, checkpoint_id: str) -> NotFoundError:
    """What a change of a checkpoint that is not there answers (also the second of a batch
    naming one checkpoint twice: the first deleted it)."""
    return NotFoundError(f"checkpoint {checkpoint_id!r} not found in run {run_id!r}")


class ConflictError(StoreError):
    """The change conflicts with the current state, e.g. publishing a public checkpoint (409)."""


class InvalidRequestError(StoreError):
    """Bad input: an unsafe name, a TTL out of range (400)."""


class ReadOnlyStoreError(StoreError):
    """The store's folder cannot be written; browsing works, changes do not (HTTP 403)."""


class StoreClosedError(StoreError):
    """The store was closed (the server is stopping): HTTP 503, try again later."""


class StorageError(StoreError):
    """The disk refused a change (full, over quota, read-only, failing) or the metadata file
    was busy. The change did not happen: the store rolled back what it had begun."""

    retry_after: float | None = None
    """Seconds after which trying again may work; None when only a person can fix it."""


class StorageFullError(StorageError):
    """No room to write: the disk is full or over quota, or mounted read-only (HTTP 507)."""


class StorageFailedError(StorageError):
    """The disk failed (an I/O error): HTTP 503, and retrying at once will not help."""


class StoreBusyError(StorageError):
    """The metadata file is locked by another program: HTTP 503, try again shortly."""

    retry_after = 1.0
