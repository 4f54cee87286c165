"""A bucket store's deletes: checkpoints asked for by name, the expiry sweep, and at open
the interrupted deletes finished (`deleting.py` does the work on the objects).

Checkpoints are deleted in batches: the deletes asked for together (the server gathers them)
are one batch of `deleting.py`'s (one intent record, DeleteObjects spanning checkpoints).
A batch asked for by name deletes the objects outside the store's lock (`claim`, then
`delete_objects`, then `forget` under the lock again), so batches sent side by side wait on
the network side by side; every other method runs under the lock. A delete that did not
finish (a key the bucket refused, an object written meanwhile) answers an error naming what
happened, and the store looks at the bucket again so its lists show what is left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ckpt_tui.store.blobs.objects import ObjectStorage, key_of
from ckpt_tui.store.bucket.deleting import (
    DELETES,
    BucketDeleter,
    DeleteAsk,
    DeleteOutcome,
    Recovery,
)
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import META_FOLDER, BucketPlace
from ckpt_tui.store.bucket.tree import join
from ckpt_tui.store.errors import ConflictError, NotFoundError, StoreError, checkpoint_not_found
from ckpt_tui.store.index import CheckpointEntry
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.meta import Key
from ckpt_tui.timekeeping.clock import Clock

logger = logging.getLogger("ckpt_tui.store")

Deleted = DeleteOutcome | StoreError | None
"""What the objects' part of one checkpoint's delete did: its outcome, a refusal (nothing of
it changed), or None when it had no objects."""


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
        self.deleter.before_record = self.keep_store_id  # a delete is a change
        self._storage = storage
        self._deleting: set[Key] = set()
        """Checkpoints whose objects are being deleted (outside the store's lock)."""
        self._ledger = ledger
        self.recovery = Recovery()
        """What the open found of interrupted deletes (finished, or why not)."""

    def delete(
        self, entries: Sequence[CheckpointEntry], touch: bool, rescan: Callable[[], None]
    ) -> list[Exception | None]:
        """Delete `entries`' objects, then forget them, all under the store's lock (the
        sweep); each one's error (None: deleted)."""
        claimed: list[CheckpointEntry] = []
        errors: dict[Key, Exception] = {}
        for entry in entries:
            try:
                self.claim(entry)
                claimed.append(entry)
            except StoreError as exc:
                errors[entry.key] = exc
        try:
            outcomes = self.delete_objects(claimed)
        finally:
            for entry in claimed:
                self.release(entry)
        forgotten = self.forget(claimed, outcomes, touch, rescan)
        errors.update((e.key, error) for e, error in zip(claimed, forgotten, strict=True) if error)
        return [errors.get(entry.key) for entry in entries]

    def claim(self, entry: CheckpointEntry) -> None:
        """Mark `entry` as being deleted (under the store's lock); ConflictError if it is."""
        if entry.key in self._deleting:
            raise ConflictError(f"{entry.tinker_path} is being deleted already")
        self._deleting.add(entry.key)

    def release(self, entry: CheckpointEntry) -> None:
        self._deleting.discard(entry.key)

    def delete_objects(self, entries: Sequence[CheckpointEntry]) -> list[Deleted]:
        """The objects' part of the deletes, one batch (`deleting.py`): network work that
        needs no store lock. Each one's outcome; None when the checkpoint has no objects; a
        refusal (nothing of it changed; still being written: ConflictError)."""
        results: dict[int, Deleted] = {}
        asks: dict[int, DeleteAsk] = {}
        for n, entry in enumerate(entries):
            facts = entry.facts or {}
            reason = facts.get("incomplete_reason", "still being written")
            run_id, checkpoint_id = entry.key
            try:
                name = checkpoint_name(self.place, entry.location)
            except StoreError as exc:
                results[n] = exc
                continue
            asks[n] = DeleteAsk(name, run_id, checkpoint_id, reason if entry.incomplete else None)
        done = self.deleter.delete_batch(list(asks.values()))
        for n, outcome in zip(asks, done, strict=True):
            results[n] = None if isinstance(outcome, NotFoundError) else outcome
        return [results[n] for n in range(len(entries))]

    def keep_store_id(self) -> None:
        """Keep the store id in the bucket (one create-only write; the first writer's id
        wins), as the first change through ckpt-tui does: from then on the id no longer
        follows the listing (`identity.listed_id`), which a delete changes. A write that
        fails is logged; the id then still follows the listing."""
        try:
            self._ledger.meta.ensure_store_id()
        except StoreError as exc:
            logger.warning("the store id was not kept in the bucket: %s", exc)

    def forget(
        self,
        entries: Sequence[CheckpointEntry],
        outcomes: Sequence[Deleted],
        touch: bool,
        rescan: Callable[[], None],
    ) -> list[Exception | None]:
        """Under the store's lock again: forget the checkpoints whose objects are gone (one
        change), and, when any is not, look at the bucket again (its lists show what is
        left); each one's error (None: deleted), saying what happened."""
        errors: list[Exception | None] = []
        gone: list[CheckpointEntry] = []
        for entry, outcome in zip(entries, outcomes, strict=True):
            run_id, checkpoint_id = entry.key
            if outcome is None:
                errors.append(checkpoint_not_found(run_id, checkpoint_id))
            elif isinstance(outcome, StoreError):
                errors.append(outcome)
            elif not outcome.done:
                errors.append(outcome.error())
            else:
                errors.append(None)
                gone.append(entry)
        current = [found for entry in gone if (found := self._current(entry)) is not None]
        if current:
            self._ledger.commit_deletes(current, touch)
        if any(o is None or (isinstance(o, DeleteOutcome) and not o.done) for o in outcomes):
            try:
                rescan()
            except (StoreError, OSError) as exc:  # the others' answers stand: they are gone
                logger.warning("looking at the bucket again after a delete failed: %s", exc)
        return errors

    def _current(self, entry: CheckpointEntry) -> CheckpointEntry | None:
        """`entry` as the index holds it now (a look meanwhile may have dropped it)."""
        run = self._ledger.index.runs.get(entry.key[0])
        current = None if run is None else run.checkpoints.get(entry.key[1])
        return current if current is not None else self._ledger.index.expired.get(entry.key)

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

    def recover(self, readonly: bool, records: Callable[[], list[str]]) -> None:
        """Finish (or, read-only, report) the interrupted deletes the bucket holds, whose
        intent records `records` lists (`recovery.pending`: StoreError when it cannot)."""
        try:
            self.recovery = self.deleter.recover(readonly=readonly, records=records())
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
