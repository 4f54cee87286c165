"""`BucketStore`: a bucket prefix served like a folder store.

It is a `Store` whose watcher reads the bucket (`BucketWatcher`): listing, paging, ordering,
expiry hiding, problems and the server's answers are the folder store's own code. Its metadata
rows are in memory, their shared part also in the bucket (see below); its layout points
nowhere on disk (`NO_FOLDER`), so a file operation that slipped through fails rather than
touching the working folder.

Writes (`changes.py`, `shared.py`): published, TTL and created times are kept in the bucket
under the prefix (`metadata.py`, conditional writes), so publish and TTL are the folder
store's own `Writer` over a `SharedMetaDB`; a delete is `deleting.py`'s (an intent record,
batched DeleteObjects, a listing to verify), and the open finishes interrupted deletes before
the first look. `readonly=True` (`--readonly`) refuses every change and writes nothing.
`self.storage` (an `ObjectStorage`) lists, stats and reads ranges.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import files
from ckpt_tui.store.bucket.ahead import begun
from ckpt_tui.store.bucket.changes import BucketChanges, checkpoint_name
from ckpt_tui.store.bucket.deleting import BucketDeleter
from ckpt_tui.store.bucket.identity import bucket_id
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.bucket.recovery import pending
from ckpt_tui.store.bucket.shared import SharedMetaDB
from ckpt_tui.store.bucket.tree import list_tree
from ckpt_tui.store.bucket.watcher import BucketWatcher
from ckpt_tui.store.deleter import Deleter
from ckpt_tui.store.errors import StoreError, checkpoint_not_found
from ckpt_tui.store.export import CheckpointFile, ServedFile
from ckpt_tui.store.guard import Guard
from ckpt_tui.store.index import CheckpointEntry
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.store.storage import storage_errors
from ckpt_tui.store.store import Store
from ckpt_tui.store.times import to_us
from ckpt_tui.store.writer import Writer
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

logger = logging.getLogger("ckpt_tui.store")

NO_FOLDER = Path("/dev/null/bucket-store")
"""The layout root of a bucket store: no file operation can succeed under it (ENOTDIR)."""


class BucketStore(Store):
    """A checkpoint store on a bucket prefix (see the module)."""

    def __init__(
        self,
        storage: ObjectStorage,
        clock: Clock,
        settle_seconds: float = SETTLE_SECONDS,
        readonly: bool = False,
    ) -> None:  # deliberately not Store.__init__: nothing here is a folder
        self.storage = storage
        self.root = Path(storage.root or ".")
        self.clock = clock
        self.guard = Guard(Path(storage.url))
        layout = Layout(NO_FOLDER)
        self._layout = layout
        place = BucketPlace(storage.object_store, storage.root, storage.url)
        # The prefix is listed, and interrupted deletes are looked for, while BucketMeta
        # reads the store's two documents: one round trip of every open, not three.
        ahead = begun(partial(list_tree, storage), "ckpt-tui-listing")
        self._records = begun(partial(pending, BucketDeleter(place)), "ckpt-tui-deletes")
        try:
            shared = BucketMeta(place, readonly, to_us(clock.now()), bucket_id(storage))
        except BaseException:
            storage.stop()  # no store: the listing ahead ends at its next request
            raise
        self._ledger = Ledger(SharedMetaDB(shared, bucket_id(storage)), clock)
        self._watcher = BucketWatcher(storage, layout, self._ledger, self.guard, settle_seconds)
        self._watcher.listing_ahead = ahead
        self._writer = Writer(layout, self._ledger, self._watcher, readonly, unmade=False)
        self._deleter = Deleter(layout, self._ledger, self._watcher)
        self._changes = BucketChanges(storage, shared, self._ledger, clock, settle_seconds)
        self._behind: threading.Thread | None = None
        """The first look's thread (`first_look_behind`)."""
        self._keep_id_at_first_look = False
        """Whether the first look ends by keeping the store id (`open_bucket`)."""

    @classmethod
    def open_bucket(
        cls,
        storage: ObjectStorage,
        clock: Clock = SYSTEM_CLOCK,
        *,
        settle_seconds: float = SETTLE_SECONDS,
        readonly: bool = False,
        first_look_behind: bool = False,
        keep_store_id: bool = False,
    ) -> BucketStore:
        """Open the store on `storage`'s prefix, finish the deletes a crash interrupted
        (read-only: report them), read it once (a failed listing is a problem of the store,
        `problems()`, not an error: its lists say they are incomplete) and sweep.

        `keep_store_id` (a command about to change the store): keep its id in the bucket
        as the first look ends, if it keeps none (`BucketChanges.keep_store_id`), so the ids
        compared next are the kept one. An open that only looks writes none.

        `first_look_behind` (the app's in-process backends): the first look and sweep run in
        a thread of their own, already holding the store's lock when this returns, so the
        caller goes on (the TUI paints its first frame) while every read of the store waits
        for that look: nothing is ever answered from the empty index of a store not read."""
        store = cls(storage, clock, settle_seconds, readonly)
        try:
            with store.guard.held():
                store._keep_id_at_first_look = keep_store_id and not readonly
                store._changes.recover(readonly, store._records.result)
                if isinstance(store._watcher, BucketWatcher):
                    store._watcher.unfinished_deletes = store._changes.unfinished(storage.root)
                    if store._changes.recovery.finished:  # deleted objects it may list
                        store._watcher.listing_ahead = None
                if not first_look_behind:
                    store._first_look()
        except BaseException:
            store.close()
            store.storage.stop()  # a listing ahead not taken ends at its next request
            raise
        if first_look_behind:
            store._look_behind()
        return store

    @property
    def store_id(self) -> str:
        """As `Store.store_id`; while the bucket keeps none, made from what the latest look
        listed (`identity.listed_id`). So it waits for the first look (`first_look_behind`),
        and looks again when one is due, as a list does: two backends of one bucket asked
        together judge by listings made then, not one of them by an old one."""
        if not self.guard.closed:
            self._watcher.notice_changes_unlocked()
        with self.guard.lock:
            return self._ledger.meta.store_id

    def _first_look(self) -> None:
        self._watcher.scan_all()
        if self.guard.closed:  # closed during the look: what it read may be partial
            return
        if self._keep_id_at_first_look:  # after the listing: the id it made is the one kept
            self._changes.keep_store_id()
        if not self.readonly:
            self._sweep()  # on what was just read: no second look

    def _look_behind(self) -> None:
        holding = threading.Event()

        def look() -> None:
            with self.guard.lock:
                holding.set()
                if self.guard.closed:
                    return
                try:
                    self._first_look()
                except Exception as exc:  # a problem of the store, never an empty bucket
                    if isinstance(self._watcher, BucketWatcher):
                        self._watcher.failed_first_look(exc)

        self._behind = threading.Thread(target=look, name="ckpt-tui-bucket-look", daemon=True)
        self._behind.start()
        holding.wait()

    def close(self) -> None:
        """As `Store.close`; while the first look is still reading (`first_look_behind`),
        closed at once without waiting for it (an app quitting early does not hang on it):
        later calls refuse, and the look sends no more requests (`ObjectStorage.stop`) and
        ends once those in flight are answered."""
        if self._behind is not None and self._behind.is_alive():
            self.guard.closed = True  # the look's thread holds the lock: later calls refuse
            self.storage.stop()
            return
        super().close()

    @property
    def delete_step_hook(self) -> Callable[[str], None] | None:
        """Called after a delete's intent record and after each batch (`deleting.py`)."""
        return self._changes.deleter.step_hook

    @delete_step_hook.setter
    def delete_step_hook(self, hook: Callable[[str], None] | None) -> None:
        self._changes.deleter.step_hook = hook

    @property
    def recovery_problems(self) -> list[str]:
        """What the open found of interrupted deletes it did not finish, and why."""
        recovery = self._changes.recovery
        unfinished = [str(o.error()) for o in recovery.finished if not o.done]
        return [*unfinished, *recovery.problems]

    @property
    def write_problem(self) -> str | None:
        """Said once the first write found the server ignores conditional writes."""
        return self._changes.place_problem()

    def delete_checkpoint(self, run_id: str, checkpoint_id: str) -> None:
        """Delete a checkpoint's objects, then forget it: `delete_checkpoints` of one."""
        (error,) = self.delete_checkpoints([(run_id, checkpoint_id)])
        if error is not None:
            raise error

    def delete_checkpoints(self, keys: Sequence[tuple[str, str]]) -> list[Exception | None]:
        """Delete each (run_id, checkpoint_id) as one batch of the bucket's delete
        (`deleting.py`: one intent record, DeleteObjects spanning checkpoints, one look to
        verify), outside the store's lock: batches asked for side by side wait on the bucket
        side by side. Returns each one's error (None: deleted); one failing (not found,
        still being written, a key the bucket refused) changes nothing for the others. A
        checkpoint asked twice is deleted once, the second answered as if asked after the
        first: not found once the first deleted it, else the first's error. The server
        hands the DELETEs asked for together to this (`ckpt_tui.server.deletes`)."""
        errors: dict[int, Exception] = {}
        entries: dict[int, CheckpointEntry] = {}
        first_ask: dict[tuple[str, str], int] = {}
        again: dict[int, int] = {}  # a checkpoint asked again -> where it was first asked
        with self.guard.held():
            self._writer.require_writable()
            for n, (run_id, checkpoint_id) in enumerate(keys):
                try:
                    entry = self._watcher.live_entry(run_id, checkpoint_id)
                    if entry.key in first_ask:
                        again[n] = first_ask[entry.key]
                        continue
                    self._changes.claim(entry)
                except StoreError as exc:
                    errors[n] = exc
                else:
                    entries[n] = entry
                    first_ask[entry.key] = n
        batch = list(entries.values())
        try:
            outcomes = self._changes.delete_objects(batch)
        finally:
            with self.guard.lock:
                for entry in batch:
                    self._changes.release(entry)
        with self.guard.held(), storage_errors(f"deleting {len(batch)} checkpoints"):
            forgotten = self._changes.forget(
                batch, outcomes, touch=True, rescan=self._watcher.scan_all
            )
        errors.update((n, e) for n, e in zip(entries, forgotten, strict=True) if e is not None)
        for n, first in again.items():
            errors[n] = errors.get(first) or checkpoint_not_found(*keys[n])
        return [errors.get(n) for n in range(len(keys))]

    def wait_for_purges(self) -> None:
        """Nothing is purged later: a bucket's delete is done when it answers."""

    def sweep_expired(self) -> list[str]:
        """Delete every checkpoint past expires_at (as `Store.sweep_expired`)."""
        if self.readonly:
            return []
        self._watcher.notice_changes_unlocked(force=True)
        with self.guard.held():
            return self._sweep()

    def _sweep(self) -> list[str]:
        self._ledger.hide_expired()
        expired = sorted(self._ledger.index.expired.values(), key=lambda e: e.tinker_path)
        errors = self._changes.delete(expired, touch=False, rescan=self._watcher.scan_all)
        # one that failed stays hidden; it is tried again at the next sweep
        return [
            entry.tinker_path for entry, error in zip(expired, errors, strict=True) if error is None
        ]

    @property
    def url(self) -> str:
        return self.storage.url

    @property
    def objects_listed(self) -> int:
        watcher = self._watcher
        return watcher.objects_listed if isinstance(watcher, BucketWatcher) else 0

    def checkpoint_files(self, run_id: str, checkpoint_id: str) -> list[CheckpointFile]:
        """A live checkpoint's files and their sizes (for signed downloads): its objects,
        listed now (`files.py`)."""
        return files.checkpoint_files(
            self._changes.place, self._changes.deleter, self._key_of(run_id, checkpoint_id)
        )

    def open_checkpoint_file(self, run_id: str, checkpoint_id: str, name: str) -> ServedFile:
        """One of a live checkpoint's files, read from the version seen now (`files.py`)."""
        key = self._key_of(run_id, checkpoint_id)
        return files.open_file(self._changes.place, self._changes.deleter, key, name)

    def _key_of(self, run_id: str, checkpoint_id: str) -> str:
        """The key of a live checkpoint's objects (its folder, or its one object)."""
        with self.guard.held():
            entry = self._watcher.live_entry(run_id, checkpoint_id)
        place = self._changes.place
        return place.key(checkpoint_name(place, entry.location))
