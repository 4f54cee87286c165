"""The store's record of what exists: the in-memory index and the SQLite metadata, changed
together (one transaction, then the index), with a per-run change count.

The change count lets a scan that read files without the lock tell whether a run changed
through the store meanwhile (see `watcher.py`). Every method runs under the store's lock.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ckpt_tui.store.discover.known import Finding
from ckpt_tui.store.index import CheckpointEntry, Index, RunEntry
from ckpt_tui.store.meta import Key, MetaDB, Row
from ckpt_tui.store.scan import RunScan
from ckpt_tui.store.storage import is_storage_failure
from ckpt_tui.store.times import to_us
from ckpt_tui.timekeeping.clock import Clock

logger = logging.getLogger("ckpt_tui.store")


class Ledger:
    """The index and the metadata file of one store."""

    def __init__(self, meta: MetaDB, clock: Clock) -> None:
        self.meta = meta
        self.clock = clock
        self.index = Index()
        self.changes: Counter[str] = Counter()
        """Changes per run: a run read outside the lock is applied only if it had none since."""
        self.unsettled: set[str] = set()
        """Runs with a checkpoint still being written: rescanned at every check."""

    def now_us(self) -> int:
        return to_us(self.clock.now())

    def hide_expired(self) -> None:
        self.index.hide_expired(self.now_us())

    def tinker_ids(self) -> set[str]:
        """Runs in the store's own `runs/` folder."""
        return {r.run_id for r in self.index.runs.values() if r.rel is None}

    def discovered_ids(self) -> list[str]:
        """Runs found elsewhere under the root."""
        return [r.run_id for r in self.index.runs.values() if r.rel is not None]

    # --- whole scans ------------------------------------------------------------------------
    def load(self, scans: list[RunScan], stale: list[Key], gone_runs: list[str]) -> None:
        """Reconcile the metadata with a scan of every run (one transaction), fill the index."""
        added = [row for scan in scans for row in scan.new_rows]
        self._record_scan(upsert=added, delete=stale, drop_runs=gone_runs)
        entries = [entry for scan in scans for entry in scan.entries]
        self.index.load([scan.run for scan in scans], entries, self.now_us())
        self.unsettled = {e.row.run_id for e in entries if e.facts is not None and e.incomplete}

    def put_scan(self, run_id: str, rows: list[Row], scan: RunScan | None) -> None:
        """One run as just scanned (None: it is gone); `rows` are its metadata rows."""
        self.changes[run_id] += 1
        self.unsettled.discard(run_id)
        if scan is None:
            self._record_scan(delete=row_keys(rows), drop_runs=[run_id])
            self.index.drop_run(run_id)
            return
        self._record_scan(upsert=scan.new_rows, delete=scan.stale_keys)
        self.index.put_run(scan.run, scan.entries, self.now_us())
        if any(entry.incomplete for entry in scan.entries):
            self.unsettled.add(run_id)

    def _record_scan(
        self,
        *,
        upsert: Iterable[Row] = (),
        delete: Iterable[Key] = (),
        drop_runs: Iterable[str] = (),
    ) -> None:
        """Write what a scan found. On a full disk (or a locked file) the index still takes it
        in, so listing keeps working: what a scan writes is read again from the folders at the
        next open, while a change asked for (publish, TTL, delete) fails and changes nothing."""
        try:
            self.meta.apply(upsert=upsert, delete=delete, drop_runs=drop_runs)
        except sqlite3.Error as exc:
            if not is_storage_failure(exc):
                raise
            logger.warning("the scan's metadata was not saved (kept in memory): %s", exc)

    def keep_found(self, learned: Mapping[str, Finding], gone: Iterable[str]) -> None:
        """Write what discovery read from files (see `discover.known`); on a full disk it is
        only read again at the next open."""
        if not learned and not gone:
            return
        try:
            self.meta.keep_found(learned, gone)
        except sqlite3.Error as exc:
            if not is_storage_failure(exc):
                raise
            logger.warning("what discovery read was not saved (read again next time): %s", exc)

    # --- changes made through the store -----------------------------------------------------
    def add_run(self, run: RunEntry) -> None:
        self.index.put_run(run, [], self.now_us())
        self.changes[run.run_id] += 1

    def add_checkpoint(self, entry: CheckpointEntry) -> None:
        run_id = entry.row.run_id
        now_us = self.now_us()
        self.meta.apply(upsert=[entry.row], touch={run_id: now_us})
        self.changes[run_id] += 1
        self.index.add(entry, now_us)
        run = self.index.runs[run_id]
        self.touch(run, now_us)
        run.signature = run.current_signature()

    def commit_row(self, entry: CheckpointEntry, row: Row, touch: bool = True) -> None:
        """Write a changed row (one transaction) and update the index."""
        now_us = self.now_us()
        self.meta.apply(upsert=[row], touch={row.run_id: now_us} if touch else None)
        self.changes[row.run_id] += 1
        entry.row = row
        self.index.entry_changed(entry)
        if touch:
            self.touch(self.index.runs[row.run_id], now_us)
        self.index.hide_expired(now_us)

    def commit_delete(self, entry: CheckpointEntry, touch: bool) -> None:
        """Forget a checkpoint whose files were moved to the trash."""
        self.commit_deletes([entry], touch)

    def commit_deletes(self, entries: Sequence[CheckpointEntry], touch: bool) -> None:
        """Forget checkpoints whose files were moved to the trash (one transaction)."""
        now_us = self.now_us()
        run_ids = list(dict.fromkeys(entry.row.run_id for entry in entries))
        touched = dict.fromkeys(run_ids, now_us) if touch else None
        self.meta.apply(delete=[entry.key for entry in entries], touch=touched)
        deleted: dict[str, set[str]] = {run_id: set() for run_id in run_ids}
        for entry in entries:
            self.changes[entry.row.run_id] += 1
            self.index.remove(entry)
            deleted[entry.row.run_id].add(os.fspath(entry.path))
        for run_id in run_ids:
            run = self.index.runs[run_id]
            if touch:
                self.touch(run, now_us)
            run.signature = run.signature_after(deleted[run_id])

    def touch(self, run: RunEntry, now_us: int) -> None:
        run.last_change_us = now_us
        self.index.run_changed(run)


def row_keys(rows: list[Row]) -> list[Key]:
    return [(row.run_id, row.checkpoint_id) for row in rows]
