"""Reading a bucket into the ledger: one flat listing (`tree.py`), then the Tinker layout
(`tinker.py`) and the walk (`store/discover`) over it, the whole store at each look.

A bucket has no folder mtimes to tell a changed run by, so every look reads every run (the
listing is a request per 1,000 objects). What was found in a checkpoint's files is not read
or examined again while its objects' names, sizes, ETags and times are the same
(`discover.known`: kept in memory between looks, and on this machine between processes,
`read_cache`), as on disk. Looks are at most every `recheck_interval`
seconds, or when asked (`Store.rescan`). Fail closed: when the listing fails the index stays
as it was and the problem says so (a first look that fails leaves an empty, incomplete list);
a file that cannot be read is a problem on its checkpoint, never an absence.
"""

from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import Future
from pathlib import Path

from ckpt_tui.store.blobs.objects import STOPPED, ObjectStorage, reason
from ckpt_tui.store.bucket.identity import listed_id
from ckpt_tui.store.bucket.shared import ListedDocs, SharedMetaDB
from ckpt_tui.store.bucket.tinker import scan_tinker_runs
from ckpt_tui.store.bucket.tree import ListedTree, list_tree
from ckpt_tui.store.discover import Known, Reading, discover
from ckpt_tui.store.files import reading_from
from ckpt_tui.store.guard import Guard
from ckpt_tui.store.index import Index
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.ledger import Ledger, row_keys
from ckpt_tui.store.meta import Key, Row
from ckpt_tui.store.scan import RunScan, scan_found
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.store.unread import ReadProblems, why
from ckpt_tui.store.watcher import Watcher

BUCKET_RECHECK_SECONDS = 30.0
"""Seconds between looks at a bucket when listing (a look lists every object)."""


class BucketWatcher(Watcher):
    """A `Watcher` whose every look reads the whole bucket prefix."""

    recheck_interval = BUCKET_RECHECK_SECONDS

    def __init__(
        self,
        storage: ObjectStorage,
        layout: Layout,
        ledger: Ledger,
        guard: Guard,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        super().__init__(layout, ledger, guard, settle_seconds)
        self.storage = storage
        self.objects_listed = 0
        """Objects in the last whole listing (what a look costs: one request per 1,000)."""
        self.unfinished_deletes: dict[str, str] = {}
        """Deletes a crash interrupted that the open did not finish (where -> why): problems
        that make the lists incomplete, since what such a checkpoint still holds is partial."""
        self.listing_ahead: Future[ListedTree] | None = None
        """`list_tree` begun before the first look, which takes it as its own listing (its
        failure as its own): `BucketStore`'s open."""
        self._seen: str | None = None
        """The fingerprint of the objects last read: a listing that finds them all as they
        were reads no file again (unless something was unread or still being written)."""

    def _must_read_again(self) -> bool:
        """Whether a look must read files though no object changed: one could not be read,
        or a checkpoint is still settling (time alone can make it complete)."""
        return bool(self._run_unread or self._walk.unread or self._ledger.unsettled)

    def problems(self) -> ReadProblems:
        unread = {**self._walk.unread, **self.unfinished_deletes}
        for run_unread in self._run_unread.values():
            unread.update(run_unread)
        return ReadProblems.of(unread, {}, self.storage.root or ".")

    def failed_first_look(self, exc: Exception) -> None:
        """A first look that raised (not a listing that failed): the store says it is unread."""
        self._unread_whole(f"cannot be read: {reason(exc)}")

    def _unread_whole(self, why: str) -> None:
        """The look read nothing whole: the store's root is unread, for `why`."""
        self._walk = Reading(unread={self.storage.root or ".": why})

    def scan_all(self) -> None:
        """Read the whole prefix and bring the ledger in line (under the store's lock)."""
        ahead, self.listing_ahead = self.listing_ahead, None
        try:
            if ahead is not None:
                tree = ahead.result()
            else:
                tree = list_tree(self.storage, self.objects_listed if self._seen else None)
        except OSError as exc:
            self._unread_whole(f"cannot be listed: {why(exc)}")
            return  # what was known stays, listed as incomplete
        self.objects_listed = tree.object_count
        meta = self._ledger.meta
        if isinstance(meta, SharedMetaDB):
            documents = ListedDocs.in_listing(meta.bucket.place, tree.stat)
            meta.listed(listed_id(self.storage, tree.first_object()), documents)
        fingerprint = tree.fingerprint()
        if fingerprint == self._seen and not self._must_read_again():
            self._walk = Reading()  # listed whole: the store is as it was
            self._last_check = time.monotonic()
            return
        tree.read_ahead()  # without the walk's order: many requests at once
        if self.storage.stopped:  # closed meanwhile: the walk would read the metadata
            tree.keep(None)  # what was read ahead, for the next open
            self._unread_whole(f"cannot be read: {STOPPED}")
            return
        try:
            self._walk_tree(tree)
        except BaseException:
            tree.keep(None)
            raise
        self._seen = fingerprint  # read whole: an unchanged listing needs no walk

    def _walk_tree(self, tree: ListedTree) -> None:
        """The Tinker layout and the walk over `tree`, into the ledger; what the walk found
        in files is kept (`_found`, and the local cache unless the store was closed
        meanwhile: reads it could not make then are not findings to forget)."""
        root = self.storage.root
        meta = self._ledger.meta
        rows_by_run: dict[str, list[Row]] = defaultdict(list)
        for row in meta.rows():
            rows_by_run[row.run_id].append(row)
        changes = meta.run_changes()
        settling = self._settling()
        if not self._found:  # the first look (or none found yet): what the cache kept
            self._found = tree.kept_findings()
        known = Known(self._found)
        with reading_from(tree):
            scans, stale = scan_tinker_runs(root, rows_by_run, changes, settling, known)
            reserved = {scan.run.run_id for scan in scans}
            found = discover(Path(root), reserved=reserved, known=known)
            for run in found.runs:
                rows = rows_by_run.pop(run.run_id, [])
                change = changes.get(run.run_id, 0)
                scan = scan_found(run, rows, settling, change, found.reading.unread)
                scan.run.watch = ()  # no mtimes to watch: every look reads it again
                scans.append(scan)
                stale.extend(scan.stale_keys)
        self._take(scans, stale, rows_by_run, found.reading, changes)
        self._found = known.used
        tree.keep(None if self.storage.stopped else known)

    def _take(
        self,
        scans: list[RunScan],
        stale: list[Key],
        rows_by_run: dict[str, list[Row]],
        reading: Reading,
        changes: dict[str, int],
    ) -> None:
        if reading.unread:  # the runs not found may be in what was not read
            rows_by_run.clear()
        for rows in rows_by_run.values():
            stale.extend(row_keys(rows))
        self._walk = reading
        self._run_unread = {scan.run.run_id: scan.unread for scan in scans if scan.unread}
        scanned = {scan.run.run_id for scan in scans} | rows_by_run.keys()
        gone_runs = [run_id for run_id in changes if run_id not in scanned]
        self._ledger.index = Index()  # `load` fills an empty index
        self._ledger.load(scans, stale, gone_runs)
        self._last_check = time.monotonic()

    def notice_changes_unlocked(self, force: bool = False) -> bool:
        """Look at the bucket again when due (or `force`d), under the store's lock."""
        if not self._scan_lock.acquire(blocking=force):
            return False
        try:
            with self._guard.held():
                self.notice_changes(force)
            return True
        finally:
            self._scan_lock.release()

    def notice_changes(self, force: bool = False) -> None:
        if force or time.monotonic() - self._last_check >= self.recheck_interval:
            self.scan_all()

    def check_run(self, run_id: str) -> None:
        """Nothing to check one run by (no mtimes): the next look reads it."""

    def rescan_run(self, run_id: str) -> None:
        self.scan_all()
