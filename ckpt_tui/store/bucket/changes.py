"""A bucket store's deletes: one checkpoint asked for by name, the expiry sweep, and at open
the interrupted deletes finished (`deleting.py` does the work on the objects).

A delete asked for by name deletes the objects outside the store's lock (`claim`, then
`delete_objects`, then `forget` under the lock again), so deletes sent side by side (`prune`)
wait on the network side by side; every other method runs under the lock. A delete that did
not finish (a key the bucket
refused, an object written meanwhile) answers an error naming what happened, and the store
looks at the bucket again so its lists show what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ckpt_tui.store.blobs.objects import ObjectStorage, key_of
from ckpt_tui.store.bucket.deleting import DELETES, BucketDeleter, DeleteOutcome, Recovery
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import META_FOLDER, BucketPlace
from ckpt_tui.store.bucket.tree import join
from ckpt_tui.store.errors import ConflictError, NotFoundError, StoreError
from ckpt_tui.store.index import CheckpointEntry
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.meta import Key
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
        self._deleting: set[Key] = set()
        """Checkpoints whose objects are being deleted (outside the store's lock)."""
        self._ledger = ledger
        self.recovery = Recovery()
        """What the open found of interrupted deletes (finished, or why not)."""

    def delete(self, entry: CheckpointEntry, touch: bool, rescan: Callable[[], None]) -> None:
        """Delete `entry`'s objects, then forget it, all under the store's lock (the sweep)."""
        self.claim(entry)
        try:
            outcome = self.delete_objects(entry)
        finally:
            self.release(entry)
        self.forget(entry, outcome, touch, rescan)

    def claim(self, entry: CheckpointEntry) -> None:
        """Mark `entry` as being deleted (under the store's lock); ConflictError if it is."""
        if entry.key in self._deleting:
            raise ConflictError(f"{entry.tinker_path} is being deleted already")
        self._deleting.add(entry.key)

    def release(self, entry: CheckpointEntry) -> None:
        self._deleting.discard(entry.key)

    def delete_objects(self, entry: CheckpointEntry) -> DeleteOutcome | None:
        """The objects' part of the delete (`deleting.py`): network work that needs no store
        lock; None when the checkpoint has no objects. Refusals raise, having changed nothing
        (a checkpoint still being written: ConflictError)."""
        facts = entry.facts or {}
        reason = facts.get("incomplete_reason", "still being written") if entry.incomplete else None
        run_id, checkpoint_id = entry.key
        try:
            return self.deleter.delete(
                checkpoint_name(self.place, entry.location),
                run_id,
                checkpoint_id,
                incomplete_reason=reason,
            )
        except NotFoundError:
            return None

    def forget(
        self,
        entry: CheckpointEntry,
        outcome: DeleteOutcome | None,
        touch: bool,
        rescan: Callable[[], None],
    ) -> None:
        """Under the store's lock again: forget the checkpoint whose objects are gone, or look
        at the bucket again and raise the error saying what happened."""
        run_id, checkpoint_id = entry.key
        if outcome is None or not outcome.done:
            rescan()  # the lists show what is left
            if outcome is None:
                raise NotFoundError(f"checkpoint {checkpoint_id!r} not found in run {run_id!r}")
            raise outcome.error()
        run = self._ledger.index.runs.get(run_id)
        current = None if run is None else run.checkpoints.get(checkpoint_id)
        if current is None:
            current = self._ledger.index.expired.get(entry.key)
        if current is not None:  # a look meanwhile may have dropped it already
            self._ledger.commit_delete(current, touch)

    def unfinished(self, root: str) -> dict[str, str]:
        """The interrupted deletes the open did not finish, as problems (where -> why)."""
        found = {
            join(root, outcome.checkpoint): str(outcome.error())
            for outcome in self.recovery.finished
            if not outcome.done
        }
        problems = self.recovery.problems
        if problems:
            shown = "; ".join(problems[:3]) + (
                f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
            )
            found[join(root, META_FOLDER, DELETES)] = shown
        return found

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
