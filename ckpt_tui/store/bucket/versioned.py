"""JSON documents in a bucket changed with conditional writes, so no update is lost.

A change reads the document and its ETag, applies itself to what it read, and writes the
result only if the object is still that version (`If-Match`), or still absent
(`If-None-Match: *`) for a new one: obstore's `PutMode` update and create. A writer that lost
the race reads again and applies its change to the newer document (`UPDATE_ATTEMPTS` times at
most, then StoreBusyError: nothing was changed).

Not every S3 server honours these headers. `probe_conditional_writes` finds out on the first
write (a scratch object written twice with the conditions that must fail); where they are
ignored, writes are plain overwrites and `ConditionalWrites.problem` says so.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import msgspec
import obstore
from obstore.exceptions import AlreadyExistsError, BaseError, NotSupportedError, PreconditionError

from ckpt_tui.store.blobs.objects import reason
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.errors import StorageFailedError, StoreBusyError, StoreError

if TYPE_CHECKING:  # type names of obstore's stubs only
    from obstore import PutMode, PutResult, UpdateVersion

T = TypeVar("T")
logger = logging.getLogger("ckpt_tui.store")

MAX_DOC_BYTES = 64 * 1024 * 1024
"""The largest store document read (10,000 checkpoints' metadata is about 2 MB)."""
UPDATE_ATTEMPTS = 8
"""Writers racing for one document: each lost race reads again, this many times at most."""
LOST_RACE = (PreconditionError, AlreadyExistsError)


@dataclass(frozen=True)
class Versioned(Generic[T]):
    """A document as read (None when absent) and the ETag of that version."""

    doc: T | None
    e_tag: str | None


def read_doc(
    place: BucketPlace, key: str, kind: type[T], most: int = MAX_DOC_BYTES
) -> Versioned[T]:
    """The document at `key`; StoreError if it cannot be read, is longer than `most` bytes
    or is not a `kind`."""
    try:
        result = obstore.get(place.store, key)
        size = result.meta["size"]
        if size > most:
            raise StoreError(
                f"{place.name}: {key} is {size} bytes, more than a store document can be "
                f"({most}); move it away (metadata is then reset)"
            )
        data = bytes(result.bytes())
    except FileNotFoundError:
        return Versioned(None, None)
    except (BaseError, OSError) as exc:
        raise StorageFailedError(f"{place.name}: reading {key} failed: {reason(exc)}") from exc
    try:
        doc = msgspec.json.decode(data[: most + 1], type=kind)
    except msgspec.DecodeError as exc:
        raise StoreError(
            f"{place.name}: {key} is damaged ({exc}); move it away (metadata is then reset)"
        ) from None
    return Versioned(doc, result.meta["e_tag"])


@dataclass
class ConditionalWrites:
    """Whether the server honours If-Match / If-None-Match, found out on the first write."""

    supported: bool | None = None
    """None until probed."""
    problem: str | None = None
    """Said where the server lacks them: concurrent writers may then lose updates."""


def probe_conditional_writes(place: BucketPlace, found: ConditionalWrites) -> None:
    """Write a scratch object with conditions that must fail; record what the server did."""
    if found.supported is not None:
        return
    key = place.meta_key(f"probe-{uuid.uuid4().hex}")
    try:
        first = obstore.put(place.store, key, b"{}", mode="create", use_multipart=False)
        ignored = [
            header
            for header, mode in (("If-None-Match", "create"), ("If-Match", _stale(first)))
            if not _refused(place, key, mode)
        ]
    except (NotSupportedError, NotImplementedError):
        ignored = ["If-None-Match", "If-Match"]
    except (BaseError, OSError) as exc:
        raise StorageFailedError(
            f"{place.name}: writing to the bucket failed: {reason(exc)}; nothing was changed"
        ) from exc
    finally:
        _remove_quietly(place, key)
    found.supported = not ignored
    if ignored:
        found.problem = (
            f"{place.name}: the storage ignores conditional writes ({', '.join(ignored)}): "
            "two writers changing published, TTL or created times at once may lose one's change"
        )
        logger.warning("%s", found.problem)


def _stale(first: PutResult) -> PutMode:
    """An update of a version that is not the object's (a made-up ETag)."""
    stale: UpdateVersion = {"e_tag": f'"{uuid.uuid4().hex}"'}
    if first["version"] is not None:
        stale["version"] = first["version"]
    return stale


def _refused(place: BucketPlace, key: str, mode: PutMode) -> bool:
    try:
        obstore.put(place.store, key, b"{}", mode=mode, use_multipart=False)
    except LOST_RACE:
        return True
    except (NotSupportedError, NotImplementedError):  # obstore's local store: no If-Match
        return False
    return False


def _remove_quietly(place: BucketPlace, key: str) -> None:
    with suppress(BaseError, OSError):  # a scratch object left behind holds nothing
        obstore.delete(place.store, key)


def update_doc(
    place: BucketPlace,
    key: str,
    kind: type[T],
    change: Callable[[T | None], T | None],
    writes: ConditionalWrites,
) -> T | None:
    """Apply `change` to the latest document and write it if the object is still that
    version; `change` returning None writes nothing. Returns the document as written (or
    as read when nothing was written). StoreBusyError when others kept winning the race."""
    probe_conditional_writes(place, writes)
    for _ in range(UPDATE_ATTEMPTS):
        current = read_doc(place, key, kind)
        new = change(current.doc)
        if new is None:
            return current.doc
        if _write(place, key, new, current, writes):
            return new
    raise StoreBusyError(
        f"{place.name}: {key} was changed by other writers {UPDATE_ATTEMPTS} times in a row "
        "while this change was being made; nothing was changed: try again"
    )


def _write(
    place: BucketPlace, key: str, doc: object, current: Versioned[T], writes: ConditionalWrites
) -> bool:
    """Write `doc` over `current`; False when another writer got there first."""
    mode: PutMode = "overwrite"
    if writes.supported and current.e_tag is not None:
        mode = {"e_tag": current.e_tag}
    elif writes.supported and current.doc is None:
        mode = "create"
    try:
        obstore.put(place.store, key, msgspec.json.encode(doc), mode=mode, use_multipart=False)
    except LOST_RACE:
        return False
    except (BaseError, OSError) as exc:
        raise StorageFailedError(
            f"{place.name}: writing {key} failed: {reason(exc)}; nothing was changed"
        ) from exc
    return True
