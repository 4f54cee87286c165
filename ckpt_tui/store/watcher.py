"""Discovery: keeping the ledger in line with the folders, and finding live runs.

Outside changes are noticed by comparing mtimes: `runs/` (runs added or removed) and each run's
folder plus its segment folders (checkpoint folders added or removed). A changed run is rescanned
alone. The global check runs at most every `recheck_interval` seconds; a call about one run
checks that run's folders every time. A rescan looks at every file of the run's checkpoints
(name, size, mtime): a cached size counts only while those are the same (`settle.py`). Runs
with a checkpoint still being written are rescanned at every check until it settles.
Checkpoints outside `runs/` (HF Trainer, torch.save, ... anywhere under the root) are found by
a walk (`discover/`), whose files are read without the store's lock.

A folder or file that cannot be read is a problem (`problems`), never an absence: the rows of
what it may hold are kept (`scan.py`), and the folders are read again at every check until
they can be read (a `chmod` changes no mtime).
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ckpt_tui.store.discover import (
    Discovery,
    Finding,
    FoundRun,
    Known,
    Reading,
    discover,
    examine_run,
    watch_changed,
)
from ckpt_tui.store.errors import NotFoundError
from ckpt_tui.store.guard import Guard
from ckpt_tui.store.index import CheckpointEntry, RunEntry
from ckpt_tui.store.layout import (
    Layout,
    checked_checkpoint_id,
    checked_run_id,
    is_real_dir,
    mtime_ns,
)
from ckpt_tui.store.ledger import Ledger, row_keys
from ckpt_tui.store.meta import Key, Row
from ckpt_tui.store.scan import RunScan, keep_rows, list_run_ids, scan_found, scan_run
from ckpt_tui.store.settle import SETTLE_SECONDS, Settling
from ckpt_tui.store.unread import (
    SEPARATE_STORE,
    ReadProblems,
    Unread,
    concerning,
    hidden_by,
)


class Watcher:
    """Scans the store's folders into the ledger; methods without `unlocked` in their name
    run under the store's lock."""

    recheck_interval: float = 1.0
    """Seconds between checks for outside changes when listing everything."""

    def __init__(
        self, layout: Layout, ledger: Ledger, guard: Guard, settle_seconds: float = SETTLE_SECONDS
    ) -> None:
        self.settle_seconds = settle_seconds
        """How long a checkpoint's files must stay the same before it counts as complete."""
        self._layout = layout
        self._ledger = ledger
        self._guard = guard
        self._scan_lock = threading.Lock()
        """Held while discovered runs are read outside the store's lock (one scan at a time)."""
        self._runs_mtime: int | None = None
        self._discovery_watch: dict[str, int | None] = {}
        self._last_check = time.monotonic()
        self._walk = Reading()
        """What the last walk could not read, and the separate stores it left alone."""
        self._found: Mapping[str, Finding] = {}
        """What discovery found in files' contents (`discover.known`), replaced, never
        changed in place (scans read it without the lock)."""
        self._run_unread: dict[str, Unread] = {}
        """What the last scan of a run (tinker or discovered) could not read: only the runs
        with something unread, so that a list answer's look at it costs nothing."""

    def problems(self) -> ReadProblems:
        """What the last scans could not read (the lists are not whole), and the separate
        stores the walk left alone."""
        unread = {**self._walk.unread}
        for run_unread in self._run_unread.values():
            unread.update(run_unread)
        stores = {path: SEPARATE_STORE for path in self._walk.stores}
        return ReadProblems.of(unread, stores, str(self._layout.root))

    def _walk_again(self) -> bool:
        """Whether the walk must run again: a folder changed, or one could not be read."""
        runs = self._ledger.index.runs
        unread = any(run_id in runs and runs[run_id].discovered for run_id in self._run_unread)
        return unread or bool(self._walk.unread) or watch_changed(self._discovery_watch)

    def _set_unread(self, run_id: str, unread: Unread) -> None:
        if unread:
            self._run_unread[run_id] = unread
        else:
            self._run_unread.pop(run_id, None)

    # --- live lookups -----------------------------------------------------------------------
    def live_run(self, run_id: str, recheck: bool = True) -> RunEntry:
        """The live run `run_id` (validated, checked for outside changes unless `recheck` is
        False: the caller checked it a moment ago, holding the lock since) or NotFoundError."""
        run_id = checked_run_id(run_id)
        if recheck:
            self.check_run(run_id)
        self._ledger.hide_expired()
        run = self._ledger.index.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"training run {run_id!r} not found")
        return run

    def live_entry(self, run_id: str, checkpoint_id: str, recheck: bool = True) -> CheckpointEntry:
        """The live checkpoint or NotFoundError naming it; bad ids are InvalidRequestError."""
        run_id = checked_run_id(run_id)
        checked_checkpoint_id(checkpoint_id)
        entry = self.live_run(run_id, recheck).checkpoints.get(checkpoint_id)
        if entry is None:
            raise NotFoundError(f"checkpoint {checkpoint_id!r} not found in run {run_id!r}")
        return entry

    # --- scanning ---------------------------------------------------------------------------
    def scan_all(self) -> None:
        """Read every run folder, reconcile SQLite in one transaction, fill the index."""
        meta = self._ledger.meta
        rows_by_run: dict[str, list[Row]] = defaultdict(list)
        for row in meta.rows():
            rows_by_run[row.run_id].append(row)
        changes = meta.run_changes()
        self._runs_mtime = mtime_ns(self._layout.runs)
        scans: list[RunScan] = []
        stale: list[Key] = []
        settling = self._settling()
        self._found = meta.found()
        known = Known(self._found)
        for run_id in list_run_ids(self._layout):
            rows = rows_by_run.pop(run_id, [])
            change = changes.get(run_id, 0)
            scan = scan_run(self._layout, run_id, rows, settling, change, known)
            if scan is None:
                stale.extend(row_keys(rows))
            else:
                scans.append(scan)
                stale.extend(scan.stale_keys)
                self._set_unread(run_id, scan.unread)
        tinker_ids = {scan.run.run_id for scan in scans}
        found = discover(self._layout.root, reserved=tinker_ids, known=known)
        self._discovery_watch = found.watch
        self._walk = found.reading
        for run in found.runs:
            rows = rows_by_run.pop(run.run_id, [])
            change = changes.get(run.run_id, 0)
            scans.append(scan_found(run, rows, settling, change, found.reading.unread))
            stale.extend(scans[-1].stale_keys)
        if found.reading.unread:  # the runs not found may be in a folder that was not read
            rows_by_run.clear()
        for rows in rows_by_run.values():
            stale.extend(row_keys(rows))
        scanned = {scan.run.run_id for scan in scans} | rows_by_run.keys()
        gone_runs = [run_id for run_id in changes if run_id not in scanned]
        self._ledger.load(scans, stale, gone_runs)
        self._keep_found(known, whole=True, with_runs=True)

    def rescan_run(self, run_id: str) -> None:
        """Bring one run in line with its folder (or forget it if the folder is gone)."""
        old = self._ledger.index.runs.get(run_id)
        if old is not None and old.rel is not None:
            reading, known = Reading.of(self._layout.root), Known(self._found)
            found = examine_run(self._layout.root, old.rel, run_id, reading, known)
            self._put_found(run_id, found, reading.unread)
            self._keep_found(known, whole=False)
            return
        rows = self._ledger.meta.rows(run_id)
        last_change = 0 if old is None else old.last_change_us
        known = Known(self._found)
        scan = scan_run(self._layout, run_id, rows, self._settling(), last_change, known)
        self._keep_found(known, whole=False)
        self._set_unread(run_id, {} if scan is None else scan.unread)
        self._ledger.put_scan(run_id, rows, scan)

    def _put_found(self, run_id: str, found: FoundRun | None, unread: Unread) -> None:
        """A discovered run as just read (None: it holds no checkpoint any more, or its
        folder could not be read: `unread` says what could not be)."""
        rows = self._ledger.meta.rows(run_id)
        old = self._ledger.index.runs.get(run_id)
        before = None if old is None else old.checkpoints
        last_change = 0 if old is None else old.last_change_us
        folder = found.path if found is not None else None if old is None else str(old.path)
        self._set_unread(run_id, {} if folder is None else concerning(unread, folder))
        scan: RunScan | None = None
        if found is not None:
            scan = scan_found(found, rows, self._settling(), last_change, unread, before)
        elif old is not None:
            scan = _kept_run(old, rows, unread)
        self._ledger.put_scan(run_id, rows, scan)

    def _keep_found(self, known: Known, whole: bool, with_runs: bool = False) -> None:
        """Keep what was found in files' contents. After a whole walk (`whole`), the findings
        of paths it did not meet are forgotten: outside `runs/` only, or everywhere after a
        scan of every run too (`with_runs`: the run.json files)."""
        runs = os.fspath(self._layout.runs) + os.sep
        if whole:
            kept = {p: f for p, f in self._found.items() if p.startswith(runs) and not with_runs}
            found = {**kept, **known.used}
            gone = [path for path in known.before if path not in found]
        elif known.learned:
            found, gone = {**self._found, **known.learned}, []
        else:
            return
        self._found = found
        self._ledger.keep_found(known.learned, gone)

    def _settling(self) -> Settling:
        return Settling(self._ledger.now_us(), round(self.settle_seconds * 1_000_000))

    def _put_discovery(self, discovery: Discovery, skip: Collection[str] = ()) -> None:
        """Bring every discovered run in line with a walk; `skip` runs keep what they have
        (their own signature makes the next check read them again)."""
        self._discovery_watch = discovery.watch
        self._walk = discovery.reading
        self._keep_found(discovery.known, whole=True)
        found = {run.run_id: run for run in discovery.runs}
        for run_id in sorted(set(self._ledger.discovered_ids()) | found.keys()):
            if run_id not in skip:
                self._put_found(run_id, found.get(run_id), discovery.reading.unread)

    # --- noticing outside changes -----------------------------------------------------------
    def notice_changes_unlocked(self, force: bool = False) -> bool:
        """`notice_changes` for a caller that does not hold the store lock: the discovered
        runs' files (pickles, JSON) are read without it, so a slow folder delays no other call.

        One such scan runs at a time; a list that finds one running serves what is known. A run
        changed through the store while its files were read keeps its state (what was read
        could bring back a checkpoint just deleted) and is read again at the next check. False
        when some changes were not taken in (a scan was running, or a run was skipped).
        """
        if not self._scan_lock.acquire(blocking=force):
            return False
        try:
            with self._guard.held():
                plan = self._plan_scan(force)
            if plan is None:
                return True
            read = plan.read(self._layout)
            with self._guard.lock:
                if self._guard.closed:
                    return False
                changes = self._ledger.changes.items()
                changed = {run_id for run_id, n in changes if plan.seen[run_id] != n}
                self._apply_read(read, skip=changed)
                self._last_check = time.monotonic()
                return not changed
        finally:
            self._scan_lock.release()

    def _apply_read(self, read: _ScanRead, skip: Collection[str]) -> None:
        """Take in what a scan read without the lock, except for the runs in `skip`."""
        if read.discovery is not None:
            self._put_discovery(read.discovery, skip)
        self._keep_found(read.known, whole=False)
        for run_id, found in read.runs.items():
            if run_id not in skip:
                self._put_found(run_id, found, read.reading.unread)

    def _plan_scan(self, force: bool) -> _ScanPlan | None:
        """Under the lock: rescan the tinker-layout runs that changed (quick, no pickles) and
        say which discovered runs must be read again."""
        if not force and time.monotonic() - self._last_check < self.recheck_interval:
            return None
        self._notice_tinker_changes()
        seen = self._ledger.changes.copy()
        if self._walk_again():
            return _ScanPlan(seen, self._ledger.tinker_ids(), self._found, rediscover=True)
        changed = {
            run.run_id: run.rel
            for run in self._ledger.index.runs.values()
            if run.rel is not None and self._is_stale(run)
        }
        return _ScanPlan(seen, set(), self._found, changed=changed)

    def notice_changes(self, force: bool = False) -> None:
        """Rescan the runs whose folders changed; at most every `recheck_interval` unless forced."""
        if not force and time.monotonic() - self._last_check < self.recheck_interval:
            return
        self._notice_tinker_changes()
        if self._walk_again():
            tinker_ids = self._ledger.tinker_ids()
            known = Known(self._found)
            self._put_discovery(discover(self._layout.root, reserved=tinker_ids, known=known))
        for run in list(self._ledger.index.runs.values()):
            if run.rel is not None and self._is_stale(run):
                self.rescan_run(run.run_id)
        self._last_check = time.monotonic()

    def _notice_tinker_changes(self) -> None:
        runs_mtime = mtime_ns(self._layout.runs)
        if runs_mtime != self._runs_mtime:
            self._runs_mtime = runs_mtime
            on_disk = set(list_run_ids(self._layout))
            for run_id in sorted(on_disk ^ self._ledger.tinker_ids()):
                self.rescan_run(run_id)
        for run in list(self._ledger.index.runs.values()):
            if run.rel is None and self._is_stale(run):
                self.rescan_run(run.run_id)

    def check_run(self, run_id: str) -> None:
        """Rescan `run_id` (already validated) if its folders changed since last seen."""
        run = self._ledger.index.runs.get(run_id)
        if run is None:
            if is_real_dir(self._layout.run_dir(run_id)):
                self.rescan_run(run_id)
        elif self._is_stale(run):
            self.rescan_run(run_id)

    def _is_stale(self, run: RunEntry) -> bool:
        """Whether a run must be read again: still settling, or its folders changed."""
        if run.run_id in self._ledger.unsettled or run.run_id in self._run_unread:
            return True  # still settling, or not read whole: read it again
        return run.current_signature() != run.signature


def _kept_run(old: RunEntry, rows: list[Row], unread: Unread) -> RunScan | None:
    """A known run whose folder was not found because it, or a folder above it, could not be
    read: it stays as it was, its checkpoints listed as unreadable; None when it is gone."""
    reason = hidden_by(unread, str(old.path))
    if reason is None:
        return None
    run = RunEntry(
        old.run_id, old.path, old.info, old.signature, old.last_change_us,
        rel=old.rel, watch=old.watch,
    )  # fmt: skip
    scan = RunScan(run, unread=concerning(unread, str(old.path)))
    keep_rows(scan, rows, str(old.path), reason, old.checkpoints)
    return scan


@dataclass
class _ScanPlan:
    """What to read outside the lock: the whole walk, or some discovered runs again."""

    seen: Counter[str]
    """The ledger's changes per run when the plan was made."""
    tinker_ids: set[str]
    found: Mapping[str, Finding]
    """What discovery found in files' contents before (not read again while unchanged)."""
    rediscover: bool = False
    changed: dict[str, str] = field(default_factory=dict)
    """run_id -> its folder (relative to the root)."""

    def read(self, layout: Layout) -> _ScanRead:
        root, known = layout.root, Known(self.found)
        if self.rediscover:
            return _ScanRead(discover(root, reserved=self.tinker_ids, known=known))
        reading = Reading.of(root)
        runs = {i: examine_run(root, rel, i, reading, known) for i, rel in self.changed.items()}
        return _ScanRead(None, runs, reading, known)


@dataclass
class _ScanRead:
    discovery: Discovery | None
    runs: dict[str, FoundRun | None] = field(default_factory=dict)
    reading: Reading = field(default_factory=Reading)
    known: Known = field(default_factory=Known)
    """What reading `runs` found in files' contents (a whole walk's is its discovery's)."""
