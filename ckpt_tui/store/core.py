"""The store's machinery under the public API: the index kept in line with the folders.

Outside changes are noticed by comparing mtimes: `runs/` (runs added or removed) and each run's
folder plus its segment folders (checkpoint folders added or removed). A changed run is rescanned
alone. The global check runs at most every `recheck_interval` seconds; a call about one run
checks that run's folders every time. A rescan looks at every file of the run's checkpoints
(name, size, mtime): a cached size counts only while those are the same (`settle.py`). Runs
with a checkpoint still being written are rescanned at every check until it settles.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from ckpt_tui.clock import Clock
from ckpt_tui.store import trash
from ckpt_tui.store.discover import Discovery, FoundRun, discover, examine_run, watch_changed
from ckpt_tui.store.errors import (
    NotFoundError,
    ReadOnlyStoreError,
    StoreClosedError,
    StoreError,
)
from ckpt_tui.store.index import CheckpointEntry, Index, RunEntry
from ckpt_tui.store.layout import (
    Layout,
    checked_checkpoint_id,
    checked_run_id,
    is_real_dir,
    mtime_ns,
)
from ckpt_tui.store.meta import Key, MetaDB, Row
from ckpt_tui.store.opening import make_folders
from ckpt_tui.store.scan import RunScan, list_run_ids, scan_found, scan_run
from ckpt_tui.store.settle import SETTLE_SECONDS, Settling
from ckpt_tui.store.times import to_us

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="StoreCore")


def locked(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run a public method under the store's lock, refusing a closed store."""

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            if self._closed:
                raise StoreClosedError(f"the store at {self.root} is closed; open it again")
            return method(self, *args, **kwargs)

    return wrapper


class StoreCore:
    """State and internal steps shared by the public `Store` methods (all under `_lock`)."""

    recheck_interval: float = 1.0
    """Seconds between checks for outside changes when listing everything."""
    settle_seconds: float = SETTLE_SECONDS
    """How long a checkpoint's files must stay the same before it counts as complete."""

    def __init__(self, layout: Layout, clock: Clock, meta: MetaDB, readonly: bool) -> None:
        self.root: Path = layout.root
        self.clock = clock
        self.readonly = readonly
        self.delete_step_hook: Callable[[str], None] | None = None
        """Called after each of `trash.DELETE_STEPS`; tests raise from it to simulate a crash."""
        self._layout = layout
        self._meta = meta
        self._index = Index()
        self._lock = threading.RLock()
        self._scan_lock = threading.Lock()
        """Held while discovered runs are read outside `_lock` (one such scan at a time)."""
        self._changes: Counter[str] = Counter()
        """Changes per run: a run read outside the lock is applied only if it had none since."""
        self._closed = False
        self._unsettled: set[str] = set()
        """Runs with a checkpoint still being written: rescanned at every check."""
        self._runs_mtime: int | None = None
        self._discovery_watch: dict[str, int | None] = {}
        self._last_check = time.monotonic()
        self.folders_unmade = False
        """True while a lazily opened store has written nothing yet (see `Store.open`)."""

    def _now_us(self) -> int:
        return to_us(self.clock.now())

    # --- scanning ---------------------------------------------------------------------------
    def _scan_all(self) -> None:
        """Read every run folder, reconcile SQLite in one transaction, fill the index."""
        rows_by_run: dict[str, list[Row]] = defaultdict(list)
        for row in self._meta.rows():
            rows_by_run[row.run_id].append(row)
        changes = self._meta.run_changes()
        self._runs_mtime = mtime_ns(self._layout.runs)
        scans: list[RunScan] = []
        stale: list[Key] = []
        settling = self._settling()
        for run_id in list_run_ids(self._layout):
            rows = rows_by_run.pop(run_id, [])
            scan = scan_run(self._layout, run_id, rows, settling, changes.get(run_id, 0))
            if scan is None:
                stale.extend(_keys(rows))
            else:
                scans.append(scan)
                stale.extend(scan.stale_keys)
        tinker_ids = {scan.run.run_id for scan in scans}
        for run in self._discover(tinker_ids):
            rows = rows_by_run.pop(run.run_id, [])
            scans.append(scan_found(run, rows, settling, changes.get(run.run_id, 0)))
            stale.extend(scans[-1].stale_keys)
        for rows in rows_by_run.values():
            stale.extend(_keys(rows))
        found = {scan.run.run_id for scan in scans}
        gone_runs = [run_id for run_id in changes if run_id not in found]
        added = [row for scan in scans for row in scan.new_rows]
        self._meta.apply(upsert=added, delete=stale, drop_runs=gone_runs)
        entries = [entry for scan in scans for entry in scan.entries]
        self._index.load([scan.run for scan in scans], entries, self._now_us())
        self._unsettled = {e.row.run_id for e in entries if e.incomplete}

    def _rescan_run(self, run_id: str) -> None:
        """Bring one run in line with its folder (or forget it if the folder is gone)."""
        old = self._index.runs.get(run_id)
        if old is not None and old.rel is not None:
            self._put_found(run_id, examine_run(self.root, old.rel, run_id))
            return
        rows = self._meta.rows(run_id)
        last_change = 0 if old is None else old.last_change_us
        scan = scan_run(self._layout, run_id, rows, self._settling(), last_change)
        self._put_scan(run_id, rows, scan)

    def _put_found(self, run_id: str, found: FoundRun | None) -> None:
        """A discovered run as just read (None: it holds no checkpoint any more)."""
        rows = self._meta.rows(run_id)
        old = self._index.runs.get(run_id)
        last_change = 0 if old is None else old.last_change_us
        scan = None if found is None else scan_found(found, rows, self._settling(), last_change)
        self._put_scan(run_id, rows, scan)

    def _put_scan(self, run_id: str, rows: list[Row], scan: RunScan | None) -> None:
        self._changes[run_id] += 1
        self._unsettled.discard(run_id)
        if scan is None:
            self._meta.apply(delete=_keys(rows), drop_runs=[run_id])
            self._index.drop_run(run_id)
            return
        self._meta.apply(upsert=scan.new_rows, delete=scan.stale_keys)
        self._index.put_run(scan.run, scan.entries, self._now_us())
        if any(entry.incomplete for entry in scan.entries):
            self._unsettled.add(run_id)

    def _settling(self) -> Settling:
        return Settling(self._now_us(), round(self.settle_seconds * 1_000_000))

    # --- discovered runs (HF Trainer, torch.save, ... anywhere under the root) --------------
    def _discover(self, tinker_ids: set[str]) -> list[FoundRun]:
        """Walk the root for checkpoints outside `runs/`; remember what to watch."""
        found = discover(self.root, reserved=tinker_ids)
        self._discovery_watch = found.watch
        return found.runs

    def _rediscover_all(self) -> None:
        """Walk again (a watched folder changed) and bring every discovered run in line."""
        self._put_discovery(discover(self.root, reserved=self._tinker_ids()))

    def _tinker_ids(self) -> set[str]:
        return {r.run_id for r in self._index.runs.values() if r.rel is None}

    def _put_discovery(self, discovery: Discovery, skip: Collection[str] = ()) -> None:
        """Bring every discovered run in line with a walk; `skip` runs keep what they have
        (their own signature makes the next check read them again)."""
        self._discovery_watch = discovery.watch
        found = {run.run_id: run for run in discovery.runs}
        old_ids = [r.run_id for r in self._index.runs.values() if r.rel is not None]
        for run_id in sorted(set(old_ids) | found.keys()):
            if run_id not in skip:
                self._put_found(run_id, found.get(run_id))

    def _notice_changes_unlocked(self, force: bool = False) -> bool:
        """`_notice_changes` for a caller that does not hold the store lock: the discovered
        runs' files (pickles, JSON) are read without it, so a slow folder delays no other call.

        One such scan runs at a time; a list that finds one running serves what is known. A run
        changed through the store while its files were read keeps its state (what was read
        could bring back a checkpoint just deleted) and is read again at the next check. False
        when some changes were not taken in (a scan was running, or a run was skipped).
        """
        if not self._scan_lock.acquire(blocking=force):
            return False
        try:
            with self._lock:
                plan = self._plan_scan(force)
            if plan is None:
                return True
            read = plan.read(self.root)
            with self._lock:
                if self._closed:
                    return False
                changed = {run_id for run_id, n in self._changes.items() if plan.seen[run_id] != n}
                read.apply(self, skip=changed)
                self._last_check = time.monotonic()
                return not changed
        finally:
            self._scan_lock.release()

    def _plan_scan(self, force: bool) -> _ScanPlan | None:
        """Under the lock: rescan the tinker-layout runs that changed (quick, no pickles) and
        say which discovered runs must be read again."""
        if self._closed:
            raise StoreClosedError(f"the store at {self.root} is closed; open it again")
        if not force and time.monotonic() - self._last_check < self.recheck_interval:
            return None
        self._notice_tinker_changes()
        if watch_changed(self._discovery_watch):
            return _ScanPlan(self._changes.copy(), self._tinker_ids(), rediscover=True)
        changed = {
            run.run_id: run.rel
            for run in self._index.runs.values()
            if run.rel is not None
            and (run.run_id in self._unsettled or run.current_signature() != run.signature)
        }
        return _ScanPlan(self._changes.copy(), set(), changed=changed)

    def _notice_tinker_changes(self) -> None:
        runs_mtime = mtime_ns(self._layout.runs)
        if runs_mtime != self._runs_mtime:
            self._runs_mtime = runs_mtime
            on_disk = set(list_run_ids(self._layout))
            for run_id in sorted(on_disk ^ self._tinker_ids()):
                self._rescan_run(run_id)
        for run in list(self._index.runs.values()):
            if run.rel is None and (
                run.run_id in self._unsettled or run.current_signature() != run.signature
            ):
                self._rescan_run(run.run_id)

    def _check_run(self, run_id: str) -> None:
        """Rescan `run_id` (already validated) if its folders changed since last seen."""
        run = self._index.runs.get(run_id)
        if run is None:
            if is_real_dir(self._layout.run_dir(run_id)):
                self._rescan_run(run_id)
        elif run_id in self._unsettled or run.current_signature() != run.signature:
            self._rescan_run(run_id)

    def _notice_changes(self, force: bool = False) -> None:
        """Rescan the runs whose folders changed; at most every `recheck_interval` unless forced."""
        if not force and time.monotonic() - self._last_check < self.recheck_interval:
            return
        self._notice_tinker_changes()
        if watch_changed(self._discovery_watch):
            self._rediscover_all()
        for run in list(self._index.runs.values()):
            if run.rel is not None and (
                run.run_id in self._unsettled or run.current_signature() != run.signature
            ):
                self._rescan_run(run.run_id)
        self._last_check = time.monotonic()

    # --- lookups ----------------------------------------------------------------------------
    def _run(self, run_id: str) -> RunEntry:
        """The live run `run_id` (validated, checked for outside changes) or NotFoundError."""
        run_id = checked_run_id(run_id)
        self._check_run(run_id)
        self._index.hide_expired(self._now_us())
        run = self._index.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"training run {run_id!r} not found")
        return run

    def _entry(self, run_id: str, checkpoint_id: str) -> CheckpointEntry:
        """The live checkpoint or NotFoundError naming it; bad ids are InvalidRequestError."""
        run_id = checked_run_id(run_id)
        checked_checkpoint_id(checkpoint_id)
        entry = self._run(run_id).checkpoints.get(checkpoint_id)
        if entry is None:
            raise NotFoundError(f"checkpoint {checkpoint_id!r} not found in run {run_id!r}")
        return entry

    # --- changes ----------------------------------------------------------------------------
    def _require_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyStoreError(
                f"the store at {self.root} is read-only (its folder cannot be written): "
                "browsing works, but to change checkpoints make the folder writable and reopen"
            )
        if self.folders_unmade:
            make_folders(self._layout)
            self._meta.persist(self._layout.meta_file)
            self.folders_unmade = False

    def _commit_row(self, entry: CheckpointEntry, row: Row, touch: bool = True) -> None:
        """Write a changed row (one transaction) and update the index."""
        now_us = self._now_us()
        self._meta.apply(upsert=[row], touch={row.run_id: now_us} if touch else None)
        self._changes[row.run_id] += 1
        entry.row = row
        self._index.entry_changed(entry)
        if touch:
            self._touch(self._index.runs[row.run_id], now_us)
        self._index.hide_expired(now_us)

    def _touch(self, run: RunEntry, now_us: int) -> None:
        run.last_change_us = now_us
        self._index.run_changed(run)

    def _delete_entry(self, entry: CheckpointEntry, touch: bool) -> None:
        """The crash-safe delete of `trash.DELETE_STEPS`; NotFoundError if its files vanished."""
        run_id, checkpoint_id = entry.key
        slot = trash.prepare(self._layout, run_id, checkpoint_id, entry.path)
        self._step("prepare")
        try:
            trash.move(self._layout, entry.path, slot)
        except FileNotFoundError:
            trash.purge(self._layout, slot)
            self._rescan_run(run_id)
            raise NotFoundError(
                f"checkpoint {checkpoint_id!r} not found in run {run_id!r}"
            ) from None
        except (OSError, StoreError) as exc:
            trash.purge(self._layout, slot)
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot delete {entry.tinker_path}: {exc.strerror}") from exc
        self._step("move")
        self._commit_delete(entry, touch)
        self._step("commit")
        trash.purge(self._layout, slot)
        self._step("purge")

    def _commit_delete(self, entry: CheckpointEntry, touch: bool) -> None:
        now_us = self._now_us()
        run_id = entry.row.run_id
        self._meta.apply(delete=[entry.key], touch={run_id: now_us} if touch else None)
        self._changes[run_id] += 1
        self._index.remove(entry)
        run = self._index.runs[run_id]
        if touch:
            self._touch(run, now_us)
        run.signature = run.current_signature()

    def _adapters_based_on(self, entry: CheckpointEntry) -> list[str]:
        """Tinker paths of discovered adapters whose base_model is `entry`'s folder (or in it)."""
        try:
            target = entry.path.resolve()
        except OSError:  # a link swapped while it was read (realpath's readlink is unguarded)
            target = entry.path.absolute()
        users = []
        for run in self._index.runs.values():
            for other in run.checkpoints.values() if run.discovered else ():
                base = (other.facts or {}).get("base_model", "")
                if other is not entry and base and _is_inside(base, other.path, target):
                    users.append(other.tinker_path)
        return sorted(users)

    def _step(self, name: str) -> None:
        if self.delete_step_hook is not None:
            self.delete_step_hook(name)


def _keys(rows: list[Row]) -> list[Key]:
    return [(row.run_id, row.checkpoint_id) for row in rows]


def _is_inside(base: str, adapter: Path, target: Path) -> bool:
    """Whether the base model path `base` (absolute, or relative to the adapter or the
    working directory) is `target` or inside it. Hub names ("org/model") resolve nowhere."""
    for candidate in (Path(base), adapter / base):
        if candidate.exists():
            real = candidate.resolve()
            if real == target or target in real.parents:
                return True
    return False


@dataclass
class _ScanPlan:
    """What to read outside the lock: the whole walk, or some discovered runs again."""

    seen: Counter[str]
    """The store's changes per run when the plan was made."""
    tinker_ids: set[str]
    rediscover: bool = False
    changed: dict[str, str] = field(default_factory=dict)
    """run_id -> its folder (relative to the root)."""

    def read(self, root: Path) -> _ScanRead:
        if self.rediscover:
            return _ScanRead(discover(root, reserved=self.tinker_ids))
        return _ScanRead(None, {i: examine_run(root, rel, i) for i, rel in self.changed.items()})


@dataclass
class _ScanRead:
    discovery: Discovery | None
    runs: dict[str, FoundRun | None] = field(default_factory=dict)

    def apply(self, core: StoreCore, skip: Collection[str]) -> None:
        if self.discovery is not None:
            core._put_discovery(self.discovery, skip)
        for run_id, found in self.runs.items():
            if run_id not in skip:
                core._put_found(run_id, found)
