"""A bucket store's deletes: one checkpoint asked for by name, the expiry sweep, and at open
the interrupted deletes finished (`deleting.py` does the work on the objects).

Every method runs under the store's lock. A delete that did not finish (a key the bucket
refused, an object written meanwhile) answers an error naming what happened, and the store
looks at the bucket again so its lists show what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ckpt_tui.store.blobs.objects import ObjectStorage, key_of
from ckpt_tui.store.bucket.deleting import BucketDeleter, Recovery
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.errors import NotFoundError, StoreError
from ckpt_tui.store.index import CheckpointEntry
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.timekeeping.clock import Clock

logger = logging.getLogger("ckpt_tui.store")


class BucketChanges:
    """Deletes a bucket store's checkpoints through its ledger (see the module)."""

    def __init__(
        self,
        storage: ObjectStorage,
        meta: BucketMeta,
        ledger: Ledger,
        clock: Clock,
        settle_seconds: float,
    ) -> None:
        self.place = meta.place
        self._meta = meta
        self.deleter = BucketDeleter(self.place, meta, clock=clock, settle_seconds=settle_seconds)
        self._storage = storage
        self._ledger = ledger
        self.recovery = Recovery()
        """What the open found of interrupted deletes (finished, or why not)."""

    def delete(self, entry: CheckpointEntry, touch: bool, rescan: Callable[[], None]) -> None:
        """Delete `entry`'s objects, then forget it; StoreError (after `rescan`) if it did not
        finish. A checkpoint still being written is refused (ConflictError)."""
        facts = entry.facts or {}
        reason = facts.get("incomplete_reason", "still being written") if entry.incomplete else None
        run_id, checkpoint_id = entry.key
        try:
            outcome = self.deleter.delete(
                checkpoint_name(self.place, entry.location),
                run_id,
                checkpoint_id,
                incomplete_reason=reason,
            )
        except NotFoundError:
            rescan()
            raise NotFoundError(
                f"checkpoint {checkpoint_id!r} not found in run {run_id!r}"
            ) from None
        if not outcome.done:
            rescan()
            raise outcome.error()
        self._ledger.commit_delete(entry, touch)

    def place_problem(self) -> str | None:
        return self._meta.problem

    def recover(self, readonly: bool) -> None:
        """Finish (or, read-only, report) the interrupted deletes the bucket holds."""
        try:
            self.recovery = self.deleter.recover(readonly=readonly)
        except StoreError as exc:
            self.recovery = Recovery(problems=[f"interrupted deletes were not looked for: {exc}"])
        for outcome in self.recovery.finished:
            if outcome.done:
                logger.info("finished the interrupted delete of %s", outcome.checkpoint)
            else:
                logger.warning("%s", outcome.error())
        for problem in self.recovery.problems:
            logger.warning("%s", problem)


def checkpoint_name(place: BucketPlace, location: str) -> str:
    """The name below the store's prefix of the checkpoint at `location` (a storage path)."""
    key = key_of(location)
    if not place.prefix:
        return key
    if not key.startswith(place.prefix + "/"):
        raise StoreError(f"refusing to delete {key}: it is not inside the store {place.name}")
    return key[len(place.prefix) + 1 :]
