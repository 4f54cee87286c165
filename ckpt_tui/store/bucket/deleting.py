"""Deleting a checkpoint from a bucket: many objects, no rename, and a crash at any moment.

A checkpoint is every object under `<prefix>/<checkpoint>/`, or, when there is none, the one
object `<prefix>/<checkpoint>` (a `torch.save` file). `BucketDeleter.delete`:

1. lists them (a failed list changes nothing), refuses any key not under the checkpoint's own
   prefix plus `/`, and refuses a checkpoint still being written (an object newer than the
   settle time, as `settle.py` judges files; or the layout's own signs, which discovery gives
   as `incomplete_reason`);
2. writes an intent record, `<prefix>/.ckpt-tui/deletes/<id>.json`, naming every key: the
   confirmed set. Nothing outside it is ever deleted;
3. deletes the keys in batches (one DeleteObjects request per `BATCH_KEYS` keys on S3), weight
   files first (`_weights_first`);
4. lists again: a key still there failed (with its batch's error), a key not in the record
   appeared meanwhile and is left alone;
5. once none of the keys is left, drops the checkpoint's metadata and then the record.

A delete killed half-way leaves its record: `recover` (at the next open) finishes it, acting
only on the record's keys, and leaves alone a key rewritten after the delete was asked (newer
than the newest object the delete saw). A record is hostile input (`intent.py`): one that is
damaged, too long, names a path no layout keeps a checkpoint at, ids that are not that
checkpoint's, a key outside its checkpoint, or a path that holds more than one checkpoint (a
run), is reported and left as it is. Metadata is dropped only for a checkpoint positively gone:
listed again, nothing is left under its path.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import msgspec
import obstore
from obstore.exceptions import BaseError
from obstore.store import LocalStore

from ckpt_tui.store.blobs.objects import every_object, reason
from ckpt_tui.store.bucket.intent import (
    MAX_INTENT_BYTES,
    MAX_INTENT_KEYS,
    DeleteIntent,
    check_intent,
    more_than_one_checkpoint,
    refuse_outside,
)
from ckpt_tui.store.bucket.local_delete import unlink_below
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace, checked_rel
from ckpt_tui.store.bucket.versioned import read_doc
from ckpt_tui.store.discover import loose
from ckpt_tui.store.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    StorageFailedError,
    StoreError,
)
from ckpt_tui.store.settle import SETTLE_SECONDS, Settling, unsettled_reason
from ckpt_tui.store.times import to_us
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from obstore import ObjectMeta

DELETES = "deletes"
BATCH_KEYS = 1000
"""Keys per DeleteObjects request: S3's most."""


@dataclass
class DeleteOutcome:
    """What one checkpoint's delete did, key by key."""

    checkpoint: str
    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """key -> why it is still there."""
    left: dict[str, str] = field(default_factory=dict)
    """Keys under the checkpoint not deleted on purpose (appeared or rewritten meanwhile)."""
    requests: int = 0
    """Delete requests sent (batches)."""
    problem: str | None = None
    """Why the delete is not finished although no key failed (e.g. the metadata write)."""

    @property
    def done(self) -> bool:
        return not self.failed and not self.left and self.problem is None

    def error(self) -> StoreError:
        """The error to answer for an unfinished delete, saying exactly what happened."""
        total = len(self.deleted) + len(self.failed)
        parts = [f"{len(self.deleted)} of {total} objects were deleted"]
        if self.failed:
            key, why = next(iter(sorted(self.failed.items())))
            parts.append(f"{len(self.failed)} could not be (first: {key}: {why})")
        if self.left:
            key, why = next(iter(sorted(self.left.items())))
            parts.append(f"{len(self.left)} were left alone ({key}: {why})")
        if self.problem:
            parts.append(self.problem)
        return StorageFailedError(
            f"deleting {self.checkpoint} is not finished: {'; '.join(parts)}; the store "
            "finishes the delete when it is next opened, or delete it again"
        )


@dataclass
class Recovery:
    """What `recover` found: interrupted deletes finished (or not), and records not acted on."""

    finished: list[DeleteOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class BucketDeleter:
    """Deletes checkpoints' objects (see the module's docstring)."""

    def __init__(
        self,
        place: BucketPlace,
        meta: BucketMeta | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        settle_seconds: float = SETTLE_SECONDS,
        batch_keys: int = BATCH_KEYS,
    ) -> None:
        self.place = place
        self.meta = meta
        self.clock = clock
        self.settle_us = int(settle_seconds * 1_000_000)
        self.batch_keys = max(1, min(batch_keys, BATCH_KEYS))
        self.step_hook: Callable[[str], None] | None = None
        """Called after the intent is written and after each batch: tests stop there."""

    # --- one delete -------------------------------------------------------------------------
    def delete(
        self,
        checkpoint: str,
        run_id: str,
        checkpoint_id: str,
        *,
        incomplete_reason: str | None = None,
    ) -> DeleteOutcome:
        """Delete every object of `checkpoint` (see the module's docstring). Raises, having
        changed nothing, for a refusal or a failed first list; otherwise returns what each key
        did (`DeleteOutcome.done`, else `.error()`)."""
        prefix = self.place.key(checked_rel(checkpoint))
        if incomplete_reason is not None:
            raise ConflictError(_still_written(checkpoint, incomplete_reason))
        try:
            found = self._list(prefix) or self._single(prefix)
        except StoreError as exc:  # the same error, saying so
            raise type(exc)(f"{exc}; nothing was deleted") from exc
        if not found:
            raise NotFoundError(f"checkpoint {checkpoint!r} has no objects in {self.place.name}")
        newest_us = max(found.values())
        settling = Settling(to_us(self.clock.now()), self.settle_us)
        unsettled = unsettled_reason(newest_us, settling)
        if unsettled is not None:
            raise ConflictError(_still_written(checkpoint, unsettled))
        intent = DeleteIntent(checkpoint, run_id, checkpoint_id, sorted(found), newest_us)
        check_intent(self.place, intent)  # what recovery would refuse to finish is not begun
        record = self.place.meta_key(f"{DELETES}/{uuid.uuid4().hex}.json")
        self._write_intent(record, intent)
        self._step("intent")
        return self._finish(record, intent, found)

    def _write_intent(self, record: str, intent: DeleteIntent) -> None:
        data = msgspec.json.encode(intent)
        if len(data) > MAX_INTENT_BYTES:
            raise StorageFailedError(
                f"refusing to delete {intent.checkpoint}: its delete record would be "
                f"{len(data):,} bytes, more than {MAX_INTENT_BYTES:,}; nothing was deleted"
            )
        try:
            obstore.put(self.place.store, record, data, use_multipart=False)
        except (BaseError, OSError) as exc:
            raise StorageFailedError(
                f"deleting {intent.checkpoint} failed: its delete record could not be written "
                f"to {self.place.name} ({reason(exc)}); nothing was deleted"
            ) from exc

    def _finish(self, record: str, intent: DeleteIntent, found: dict[str, int]) -> DeleteOutcome:
        """Steps 3 to 5 for the keys of `intent` that `found` (a listing) still holds."""
        outcome = DeleteOutcome(intent.checkpoint)
        confirmed = set(intent.keys)
        doomed = []
        for key, modified_us in sorted(found.items()):
            if key not in confirmed:
                continue
            if modified_us > intent.newest_us:
                outcome.left[key] = "written again after the delete was asked"
            else:
                doomed.append(key)
        errors = self._delete_batches(sorted(doomed, key=_weights_first), outcome)
        try:
            after = self._now_of(intent)
        except StoreError as exc:  # a failed list, or a link or key outside found meanwhile
            outcome.problem = f"the objects could not be listed again to check ({exc})"
            return outcome
        for key in doomed:
            if key in after:
                outcome.failed[key] = errors.get(key, "still listed after the server deleted it")
            else:
                outcome.deleted.append(key)
        for key in sorted(set(after) - confirmed):
            outcome.left[key] = "appeared while the checkpoint was being deleted"
        if not outcome.failed:
            self._forget(record, intent, outcome, gone=not after)
        return outcome

    def _delete_batches(self, keys: list[str], outcome: DeleteOutcome) -> dict[str, str]:
        """Delete `keys` in batches; key -> its batch's error, for batches that raised."""
        errors: dict[str, str] = {}
        for start in range(0, len(keys), self.batch_keys):
            batch = keys[start : start + self.batch_keys]
            outcome.requests += 1
            local_root = _local_root(self.place)
            if local_root is not None:  # file://: through folder descriptors, no link followed
                errors.update(unlink_below(local_root, batch))
                self._step("batch")
                continue
            try:
                obstore.delete(self.place.store, batch)
            except (BaseError, OSError) as exc:
                errors.update(dict.fromkeys(batch, reason(exc)))
            self._step("batch")
        return errors

    def _forget(
        self, record: str, intent: DeleteIntent, outcome: DeleteOutcome, *, gone: bool
    ) -> None:
        """Step 5: the metadata of the checkpoint if it is `gone` (listed again, nothing is
        under its path), then the record (kept if the metadata could not be written, so the
        next open drops it)."""
        try:
            if self.meta is not None and gone and not outcome.left:
                self.meta.apply(delete=[(intent.run_id, intent.checkpoint_id)])
            obstore.delete(self.place.store, record)
        except StoreError as exc:
            outcome.problem = f"its metadata could not be dropped ({exc})"
        except (BaseError, OSError) as exc:
            outcome.problem = f"its delete record could not be removed ({reason(exc)})"

    # --- at open ----------------------------------------------------------------------------
    def pending(self) -> list[str]:
        """The keys of the intent records in the bucket (interrupted deletes)."""
        return sorted(self._list(self.place.meta_key(DELETES)))

    def recover(self, *, readonly: bool = False) -> Recovery:
        """Finish every interrupted delete (read-only: report them); see the docstring."""
        recovery = Recovery()
        for record in self.pending():
            intent = self._read_intent(record, recovery)
            if intent is None:
                continue
            if readonly:
                recovery.problems.append(
                    f"an interrupted delete of {intent.checkpoint} is waiting in "
                    f"{self.place.name}: open the store writable to finish it"
                )
                continue
            found = self._objects_of(intent, recovery, record)
            if found is not None:
                recovery.finished.append(self._finish(record, intent, found))
        return recovery

    def _read_intent(self, record: str, recovery: Recovery) -> DeleteIntent | None:
        try:
            intent = read_doc(self.place, record, DeleteIntent, MAX_INTENT_BYTES).doc
            if intent is None:
                return None  # removed meanwhile: that delete was finished by someone else
            check_intent(self.place, intent)
        except (StoreError, InvalidRequestError) as exc:
            _not_acted_on(recovery, record, str(exc))
            return None
        return intent

    def _objects_of(
        self, intent: DeleteIntent, recovery: Recovery, record: str
    ) -> dict[str, int] | None:
        """What is there now of the checkpoint a record deletes, as `_now_of`; None (and a
        problem) when it is more than one checkpoint (`more_than_one_checkpoint`)."""
        prefix = self.place.key(intent.checkpoint)
        if intent.keys == [prefix]:
            return self._now_of(intent)
        listed = self._listed(prefix)
        why = more_than_one_checkpoint(self.place, intent.checkpoint, listed)
        if why is not None:
            _not_acted_on(recovery, record, f"{intent.checkpoint}: {why}")
            return None
        return {key: _us(meta["last_modified"]) for key, meta in listed.items()}

    # --- listing ----------------------------------------------------------------------------
    def _now_of(self, intent: DeleteIntent) -> dict[str, int]:
        """What is there now of the checkpoint `intent` deletes (its keys, or ones added);
        for a single file, also anything under its name plus `/` (a folder of that name is
        not gone because the file is)."""
        prefix = self.place.key(intent.checkpoint)
        if intent.keys == [prefix]:
            return {**self._single(prefix), **self._list(prefix)}
        return self._list(prefix)

    def _single(self, key: str) -> dict[str, int]:
        """{key: last modified} of the one object `key`, or {} when there is none."""
        try:
            found = obstore.head(self.place.store, key)
        except FileNotFoundError:
            return {}
        except (BaseError, OSError) as exc:
            raise StorageFailedError(
                f"reading {key} in {self.place.name} failed ({reason(exc)})"
            ) from exc
        _refuse_links(self.place, [key])
        return {key: _us(found["last_modified"])}

    def _list(self, prefix: str) -> dict[str, int]:
        """key -> last modified (microseconds) of every object under `prefix` + `/`."""
        return {key: _us(meta["last_modified"]) for key, meta in self._listed(prefix).items()}

    def _listed(self, prefix: str) -> dict[str, ObjectMeta]:
        """key -> what the listing says of every object under `prefix` + `/`."""
        try:  # bounded: more objects than one checkpoint has, or pages without end, fail
            found = {
                item["path"]: item
                for item in every_object(self.place.store, prefix, MAX_INTENT_KEYS)
            }
        except (BaseError, OSError) as exc:
            raise StorageFailedError(
                f"listing {prefix} in {self.place.name} failed ({reason(exc)})"
            ) from exc
        for key in [key for key, meta in found.items() if self._is_marker(prefix, key, meta)]:
            del found[key]  # a folder, not an object of the checkpoint
        refuse_outside(found, prefix)
        _refuse_links(self.place, found)
        return found

    def _is_marker(self, prefix: str, key: str, meta: ObjectMeta) -> bool:
        """Whether a listed object is a folder marker: a zero-byte key ending in `/` (the S3
        console's "Create folder" writes one), which obstore lists without its `/` and cannot
        address (its paths never end in `/`), so it can be neither read nor deleted through
        it. Listed under `prefix/`, `prefix` itself is one; any other zero-byte key that
        HEAD does not find is one too (its real key ends in `/`)."""
        if meta["size"] != 0:
            return False
        return key == prefix or not self._single(key)

    def _step(self, name: str) -> None:
        if self.step_hook is not None:
            self.step_hook(name)


def _local_root(place: BucketPlace) -> str | None:
    """The folder of obstore's local store (`file://`); None for any other store."""
    store = place.store
    if not isinstance(store, LocalStore) or store.prefix is None:
        return None
    return str(store.prefix)


def _refuse_links(place: BucketPlace, keys: Iterable[str]) -> None:
    """StoreError if a key of obstore's local store (`file://`) is reached through a link:
    its listing follows links, so a delete through one would remove files outside the store
    (the folder store never follows a link). A link made after this check is not followed
    either: the delete goes through folder descriptors (`local_delete`)."""
    root = _local_root(place)
    if root is None:
        return
    looked: set[str] = set()
    for key in keys:
        folder = key.rpartition("/")[0]
        while folder and folder not in looked:
            looked.add(folder)
            if os.path.islink(os.path.join(root, folder)):
                raise StoreError(
                    f"{key} is reached through the link {folder} in {place.name}: links are "
                    "never followed"
                )
            folder = folder.rpartition("/")[0]


def _weights_first(key: str) -> tuple[bool, str]:
    """The order keys are deleted in: weight files (what the walk may take for checkpoints of
    their own) before the files that make a folder one checkpoint (configs, `.metadata`), so
    what a crash leaves is still that checkpoint, or no checkpoint at all: never what looks
    like a run of several, which recovery refuses (`more_than_one_checkpoint`)."""
    return (not loose.is_candidate(key.rpartition("/")[2]), key)


def _not_acted_on(recovery: Recovery, record: str, why: str) -> None:
    recovery.problems.append(
        f"the delete record {record} was not acted on: {why}; look at it, then remove it"
    )


def _still_written(checkpoint: str, reason: str) -> str:
    return (
        f"refusing to delete {checkpoint}: it is incomplete ({reason}); a save may still be "
        "writing it: wait until it is complete (its objects stay the same)"
    )


def _us(moment: datetime) -> int:
    return to_us(moment, "an object's last modified time")
