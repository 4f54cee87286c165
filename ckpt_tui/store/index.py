"""The in-memory index: every live checkpoint, presorted, with cached API objects.

Lists are served from here without touching the disk or SQLite. The store's own writes update
it; outside changes reach it through a rescan of the run they touched (see `scan.py`).
An entry past its `expires_us` moves to `expired` (hidden, waiting for the sweep).
"""

from __future__ import annotations

import bisect
import heapq
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

import msgspec

from ckpt_tui.api_types import Checkpoint, TrainingRun, checkpoint_type_of, encode
from ckpt_tui.store.layout import Signature, mtime_ns, run_signature, signature_paths
from ckpt_tui.store.meta import Key, Row
from ckpt_tui.store.runinfo import RunInfo
from ckpt_tui.store.times import from_us

SortKey = tuple[int, str]


class CheckpointEntry(msgspec.Struct, eq=False, gc=False):
    """One checkpoint: its metadata row plus where its files are (`location`, folder or file).

    The location is data, not derived from the id, so other layouts can point anywhere.
    `facts` are what discovery read from the files (format, step, incomplete...): shown in
    user_metadata under the row's own keys, never stored in SQLite. `tinker_path` and
    `sort_key` are made from the row (not arguments).

    A struct the garbage collector does not track (an entry holds no reference cycle: its
    row, strings, dicts of strings, the API object): the index of 100,000 would otherwise be
    walked by every full collection. Rows and entries untracked, the collections a warm open
    of 100,000 runs took 0.03 s instead of 0.21-0.27 s (timed with gc.callbacks).
    """

    row: Row
    location: str
    facts: dict[str, str] | None = None
    tinker_path: str = ""
    sort_key: SortKey = (0, "")  # newest first, then by tinker path
    _cached: Checkpoint | None = None
    _encoded: msgspec.Raw | None = None

    def __post_init__(self) -> None:
        self.tinker_path = f"tinker://{self.row.run_id}/{self.row.checkpoint_id}"
        self.sort_key = (-self.row.created_us, self.tinker_path)

    @property
    def path(self) -> Path:
        return Path(self.location)

    @property
    def key(self) -> Key:
        return (self.row.run_id, self.row.checkpoint_id)

    def checkpoint(self) -> Checkpoint:
        """The API object, built once until `changed`."""
        if self._cached is None:
            row = self.row
            self._cached = Checkpoint(
                checkpoint_id=row.checkpoint_id,
                checkpoint_type=checkpoint_type_of(row.checkpoint_id),
                time=from_us(row.created_us),
                tinker_path=self.tinker_path,
                size_bytes=row.size_bytes,
                public=row.public,
                user_metadata=self._user_metadata(),
                expires_at=None if row.expires_us is None else from_us(row.expires_us),
            )
        return self._cached

    def encoded(self) -> msgspec.Raw:
        """The API object as JSON, encoded once until `changed`: a page is then joined rather
        than encoded. With pages of 10,000 the server paces `ls --json` at 100,000: 0.77-0.82 s
        with this, 0.91-0.93 s without (benchmarks/bench_ls.py, run turn about)."""
        if self._encoded is None:
            self._encoded = msgspec.Raw(encode(self.checkpoint()))
        return self._encoded

    def _user_metadata(self) -> dict[str, str] | None:
        if self.facts is None:
            return None if self.row.user_metadata is None else dict(self.row.user_metadata)
        merged = {**self.facts, **(self.row.user_metadata or {})}
        if self.incomplete:  # the files' word on this, whatever the metadata says
            merged.update(incomplete="true", incomplete_reason=self.facts["incomplete_reason"])
        return merged

    @property
    def incomplete(self) -> bool:
        """Still being written (or cut short): shown, never expired or swept."""
        return self.facts is not None and self.facts.get("incomplete") == "true"

    def changed(self) -> None:
        self._cached = None
        self._encoded = None

    def expired(self, now_us: int) -> bool:
        return (
            self.row.expires_us is not None
            and self.row.expires_us <= now_us
            and not self.incomplete
        )


@dataclass(eq=False)
class RunEntry:
    """One run folder: run.json, its live checkpoints, and the mtimes last seen.

    A discovered run (`ckpt_tui.store.discover`) has `rel`, its folder under the store root,
    and `watch`, the paths whose mtimes make its signature.
    """

    run_id: str
    path: Path
    info: RunInfo
    signature: Signature
    last_change_us: int = 0
    rel: str | None = None
    watch: tuple[str, ...] | None = None
    checkpoints: dict[str, CheckpointEntry] = field(default_factory=dict)
    _sorted: list[CheckpointEntry] | None = field(default=None, repr=False)
    _run: TrainingRun | None = field(default=None, repr=False)

    @property
    def discovered(self) -> bool:
        return self.rel is not None

    def current_signature(self) -> Signature:
        """The signature as it is on disk now (compare with `signature`)."""
        if self.watch is None:
            return run_signature(self.path)
        return tuple(mtime_ns(path) for path in self.watch)

    def signature_after(self, deleted: Collection[str]) -> Signature:
        """The signature once the store itself moved the folders `deleted` (paths) away: the
        folders they were in are looked at again and the rest is as last seen, so that a
        change from outside meanwhile is still noticed at the next check (looking at all of
        them again took 4 `lstat`s a run per batch of deletes, most of a delete's rescans).
        Everything is looked at again when a deleted folder is not directly in a watched one
        or holds one."""
        paths = signature_paths(self.path) if self.watch is None else self.watch
        parents = {os.path.dirname(path) for path in deleted}
        inside = tuple(path + os.sep for path in deleted)
        if (
            len(paths) != len(self.signature)
            or not parents <= set(paths)
            or any(path in deleted or path.startswith(inside) for path in paths)
        ):
            return self.current_signature()
        return tuple(
            mtime_ns(path) if path in parents else seen
            for path, seen in zip(paths, self.signature, strict=True)
        )

    def changed(self) -> None:
        self._sorted = None
        self._run = None

    def oldest_first(self) -> list[CheckpointEntry]:
        if self._sorted is None:
            self._sorted = sorted(
                self.checkpoints.values(), key=lambda e: (e.row.created_us, e.row.checkpoint_id)
            )
        return self._sorted

    def activity_us(self) -> int:
        """last_request_time: the latest of run created, newest checkpoint, last change."""
        entries = self.oldest_first()
        newest = entries[-1].row.created_us if entries else self.info.created_us
        return max(self.info.created_us, newest, self.last_change_us)

    def training_run(self) -> TrainingRun:
        if self._run is None:
            self._run = self._build_run()
        return self._run

    def _build_run(self) -> TrainingRun:
        newest: dict[str, Checkpoint] = {}
        for entry in self.oldest_first():
            ckpt = entry.checkpoint()
            newest[ckpt.checkpoint_type] = ckpt
        info = self.info
        return TrainingRun(
            training_run_id=self.run_id,
            base_model=info.base_model,
            model_owner=info.model_owner,
            is_lora=info.is_lora,
            last_request_time=from_us(self.activity_us()),
            corrupted=info.corrupted,
            lora_rank=info.lora_rank,
            last_checkpoint=newest.get("training"),
            last_sampler_checkpoint=newest.get("sampler"),
            user_metadata=None if info.user_metadata is None else dict(info.user_metadata),
        )


class Index:
    """Runs by id, all live checkpoints newest first, and hidden expired ones."""

    def __init__(self) -> None:
        self.runs: dict[str, RunEntry] = {}
        self.expired: dict[Key, CheckpointEntry] = {}
        self._keys: list[SortKey] = []
        self._entries: list[CheckpointEntry] = []
        self._expiry_heap: list[tuple[int, str, str]] = []
        self._run_order: list[RunEntry] | None = None

    # --- bulk -------------------------------------------------------------------------------
    def load(self, runs: list[RunEntry], entries: list[CheckpointEntry], now_us: int) -> None:
        """Fill an empty index in one sort (used at open)."""
        for run in runs:
            self.runs[run.run_id] = run
        live = []
        by_id = self.runs
        for entry in entries:  # 100,000 at a warm open: no call for an entry without expiry
            row = entry.row
            if row.expires_us is not None:
                if self._park_if_expired(entry, now_us):
                    continue
                self._track_expiry(entry)
            by_id[row.run_id].checkpoints[row.checkpoint_id] = entry
            live.append(entry)
        live.sort(key=attrgetter("sort_key"))
        self._entries = live
        self._keys = [e.sort_key for e in live]
        self._run_order = None

    def put_run(self, run: RunEntry, entries: list[CheckpointEntry], now_us: int) -> None:
        """Replace a run (after a rescan) with `run` holding `entries`."""
        self.drop_run(run.run_id)
        self.runs[run.run_id] = run
        for entry in entries:
            self.add(entry, now_us)
        self._run_order = None

    def drop_run(self, run_id: str) -> None:
        old = self.runs.get(run_id)
        if old is not None:
            for entry in list(old.checkpoints.values()):
                self.remove(entry)
            del self.runs[run_id]
        for key in [k for k in self.expired if k[0] == run_id]:
            del self.expired[key]
        self._run_order = None

    # --- single entries ---------------------------------------------------------------------
    def add(self, entry: CheckpointEntry, now_us: int) -> None:
        if self._park_if_expired(entry, now_us):
            return
        run = self.runs[entry.row.run_id]
        run.checkpoints[entry.row.checkpoint_id] = entry
        run.changed()
        at = bisect.bisect_left(self._keys, entry.sort_key)
        self._keys.insert(at, entry.sort_key)
        self._entries.insert(at, entry)
        self._track_expiry(entry)
        self._run_order = None

    def remove(self, entry: CheckpointEntry) -> None:
        """Forget a live or expired entry."""
        if self.expired.pop(entry.key, None) is not None:
            return
        run = self.runs[entry.row.run_id]
        if run.checkpoints.pop(entry.row.checkpoint_id, None) is None:
            return
        run.changed()
        at = bisect.bisect_left(self._keys, entry.sort_key)
        while self._entries[at] is not entry:
            at += 1  # equal keys cannot happen (tinker paths are unique), but stay correct
        del self._keys[at]
        del self._entries[at]
        self._run_order = None

    def entry_changed(self, entry: CheckpointEntry) -> None:
        """After a metadata change: drop cached objects, re-track expiry."""
        entry.changed()
        self.runs[entry.row.run_id].changed()
        self._track_expiry(entry)
        self._run_order = None

    def run_changed(self, run: RunEntry) -> None:
        """After a change to a run's own fields (run.json, last change time)."""
        run.changed()
        self._run_order = None

    # --- expiry -----------------------------------------------------------------------------
    def hide_expired(self, now_us: int) -> None:
        """Move every live entry past its expiry to `expired`; cheap when none is due."""
        heap = self._expiry_heap
        while heap and heap[0][0] <= now_us:
            expires_us, run_id, checkpoint_id = heapq.heappop(heap)
            run = self.runs.get(run_id)
            entry = None if run is None else run.checkpoints.get(checkpoint_id)
            if entry is not None and entry.row.expires_us == expires_us and entry.expired(now_us):
                self.remove(entry)
                self.expired[entry.key] = entry

    def _park_if_expired(self, entry: CheckpointEntry, now_us: int) -> bool:
        if entry.expired(now_us):
            self.expired[entry.key] = entry
            return True
        return False

    def _track_expiry(self, entry: CheckpointEntry) -> None:
        row = entry.row
        if row.expires_us is not None:
            heapq.heappush(self._expiry_heap, (row.expires_us, row.run_id, row.checkpoint_id))

    # --- reads ------------------------------------------------------------------------------
    def page(self, offset: int, limit: int) -> list[CheckpointEntry]:
        return self._entries[offset : offset + limit]

    def total(self) -> int:
        return len(self._entries)

    def runs_by_activity(self) -> list[RunEntry]:
        """Newest activity first; ties by run id."""
        if self._run_order is None:
            self._run_order = sorted(self.runs.values(), key=lambda r: (-r.activity_us(), r.run_id))
        return self._run_order

    def find(self, run_id: str, checkpoint_id: str) -> CheckpointEntry | None:
        run = self.runs.get(run_id)
        return None if run is None else run.checkpoints.get(checkpoint_id)
