"""`BucketStore`: a bucket prefix served like a folder store.

It is a `Store` whose watcher reads the bucket (`BucketWatcher`): listing, paging, ordering,
expiry hiding, problems and the server's answers are the folder store's own code. Its metadata
is in memory until the bucket keeps it (see below); its layout points nowhere on disk
(`NO_FOLDER`), so a file operation that slipped through fails rather than touching the
working folder.

WRITES PLUG IN HERE. Until they do, a bucket store is read-only: every change answers
ReadOnlyStoreError (403) and the sweeper deletes nothing. The write side replaces, in a
subclass or in this class:
- `set_public`, `set_ttl`: published/TTL/created times kept in the bucket under the prefix
  (conditional PUTs, ETag If-Match / If-None-Match), then `self._ledger.commit_row`;
- `delete_checkpoint`, `sweep_expired`: an intent record naming every key, then
  `self.storage.delete_batch` (DeleteObjects, 1,000 keys a request), a listing to verify
  nothing is left, then `self._ledger.commit_delete`; every key checked to start with the
  checkpoint's prefix plus `/` (`entry.location`);
- `open` (here): recovery of interrupted deletes, and the bucket's store id, before the
  first look; and `readonly` (here: always True) from whether the bucket can be written.
`self.storage` (an `ObjectStorage`) lists, stats, reads ranges and deletes batches.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import BinaryIO

from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket.watcher import BucketWatcher
from ckpt_tui.store.deleter import Deleter
from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.export import CheckpointFile
from ckpt_tui.store.guard import Guard
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.meta import MetaDB
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.store.store import Store
from ckpt_tui.store.writer import Writer
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

NO_FOLDER = Path("/dev/null/bucket-store")
"""The layout root of a bucket store: no file operation can succeed under it (ENOTDIR)."""


class BucketStore(Store):
    """A checkpoint store on a bucket prefix (see the module)."""

    def __init__(
        self, storage: ObjectStorage, clock: Clock, settle_seconds: float = SETTLE_SECONDS
    ) -> None:  # deliberately not Store.__init__: nothing here is a folder
        self.storage = storage
        self.root = Path(storage.root or ".")
        self.clock = clock
        self.guard = Guard(Path(storage.url))
        layout = Layout(NO_FOLDER)
        self._layout = layout
        meta = MetaDB(sqlite3.connect(":memory:", check_same_thread=False), bucket_id(storage))
        self._ledger = Ledger(meta, clock)
        self._watcher = BucketWatcher(storage, layout, self._ledger, self.guard, settle_seconds)
        self._writer = Writer(layout, self._ledger, self._watcher, readonly=True, unmade=False)
        self._deleter = Deleter(layout, self._ledger, self._watcher)

    @classmethod
    def open_bucket(
        cls,
        storage: ObjectStorage,
        clock: Clock = SYSTEM_CLOCK,
        *,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> BucketStore:
        """Open the store on `storage`'s prefix and read it once (a failed listing is a
        problem of the store, `problems()`, not an error: its lists say they are incomplete)."""
        store = cls(storage, clock, settle_seconds)
        with store.guard.held():
            store._watcher.scan_all()
        return store

    @property
    def url(self) -> str:
        return self.storage.url

    @property
    def objects_listed(self) -> int:
        watcher = self._watcher
        return watcher.objects_listed if isinstance(watcher, BucketWatcher) else 0

    def checkpoint_files(self, run_id: str, checkpoint_id: str) -> list[CheckpointFile]:
        raise StoreError(
            f"downloads from {self.url} are not served yet: copy the files with your cloud's "
            "own tool (aws s3 cp, gcloud storage cp, azcopy)"
        )

    def open_checkpoint_file(self, run_id: str, checkpoint_id: str, name: str) -> BinaryIO:
        self.checkpoint_files(run_id, checkpoint_id)
        raise AssertionError("unreachable")


def bucket_id(storage: ObjectStorage) -> str:
    """The id of a bucket store while the bucket keeps none: from its location (the write
    side keeps one in the bucket, so two spellings of one endpoint are one store)."""
    return hashlib.sha256(f"bucket\0{storage.url}".encode()).hexdigest()[:32]
