"""Finishing, at a bucket store's open, the deletes a crash interrupted (`deleting.py` writes
their records), or reporting them.

Every record under `<prefix>/.ckpt-tui/deletes/` is an interrupted delete. A read-only open
reports each checkpoint waiting. Otherwise each record is read as hostile input
(`intent.read_intents`: one that is damaged, too long, names a path no layout keeps a
checkpoint at, ids that are not that checkpoint's, or a key outside its checkpoint is reported
and left whole as it is); then each checkpoint it names is listed alone, and a path that now
holds more than one checkpoint (a run) leaves the whole record reported and untouched
(`more_than_one_checkpoint`). Else the delete is finished as it began (`finish`: steps 3 to 5
of `deleting.py`), acting only on the record's keys and leaving alone a key rewritten after
the delete was asked (newer than the newest object the delete saw).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ckpt_tui.store.bucket.intent import (
    DELETES,
    DeleteIntent,
    more_than_one_checkpoint,
    read_intents,
    want_after,
)
from ckpt_tui.store.bucket.outcome import DeleteOutcome, Found, Recovery, modified_us
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.errors import StoreError

if TYPE_CHECKING:
    from obstore import ObjectMeta


class Finishing(Protocol):
    """What recovery needs of the delete (`deleting.BucketDeleter`)."""

    place: BucketPlace

    def finish(
        self, record: str, intents: list[DeleteIntent], found: list[Found]
    ) -> list[DeleteOutcome]: ...

    def listed_keys(self, prefix: str) -> dict[str, int]: ...

    def listed(self, prefix: str) -> dict[str, ObjectMeta]: ...

    def single(self, key: str) -> dict[str, int]: ...


def pending(deleter: Finishing) -> list[str]:
    """The keys of the intent records in the bucket (interrupted deletes)."""
    return sorted(deleter.listed_keys(deleter.place.meta_key(DELETES)))


def recover(
    deleter: Finishing, *, readonly: bool = False, records: Sequence[str] | None = None
) -> Recovery:
    """Finish every interrupted delete (read-only: report them); see the docstring.
    `records`: the intent records' keys, when listed already (`pending`)."""
    recovery = Recovery()
    for record in pending(deleter) if records is None else records:
        intents = _read_intents(deleter.place, record, recovery)
        if readonly:
            recovery.problems.extend(
                f"an interrupted delete of {intent.checkpoint} is waiting in "
                f"{deleter.place.name}: open the store writable to finish it"
                for intent in intents
            )
        elif intents:
            _recover(deleter, record, intents, recovery)
    return recovery


def _read_intents(place: BucketPlace, record: str, recovery: Recovery) -> list[DeleteIntent]:
    """The checkpoints `record` names (a single checkpoint's record or a batch's), or none
    when it is gone or not to be acted on (said in `recovery`)."""
    try:
        return read_intents(place, record)
    except StoreError as exc:  # InvalidRequestError is one too
        _not_acted_on(recovery, record, str(exc))
        return []


def _recover(
    deleter: Finishing, record: str, intents: list[DeleteIntent], recovery: Recovery
) -> None:
    """Finish the delete `record` asked, unless a checkpoint it names is now more than one
    checkpoint: then nothing of it is touched (said in `recovery`)."""
    found: list[Found] = []
    for intent in intents:
        now = _objects_of(deleter, intent)
        if isinstance(now, str):
            _not_acted_on(recovery, record, f"{intent.checkpoint}: {now}")
            return
        found.append(now)
    recovery.finished.extend(deleter.finish(record, intents, found))


def _objects_of(deleter: Finishing, intent: DeleteIntent) -> Found | str:
    """What is there now of the checkpoint a record deletes (as the look after a delete sees
    it, `want_after`); why not to act on it, when the objects under its path are more than
    one checkpoint (`more_than_one_checkpoint`). Each listed alone: the walk needs what the
    listing says of each object, and recovery is rare."""
    place = deleter.place
    prefix = place.key(intent.checkpoint)
    try:
        if want_after(place, intent) == "file":
            return {**deleter.single(prefix), **deleter.listed_keys(prefix)}
        listed = deleter.listed(prefix)
    except StoreError as exc:
        return exc
    why = more_than_one_checkpoint(place, intent.checkpoint, listed)
    if why is not None:
        return why
    return modified_us(listed)


def _not_acted_on(recovery: Recovery, record: str, why: str) -> None:
    recovery.problems.append(
        f"the delete record {record} was not acted on: {why}; look at it, then remove it"
    )
