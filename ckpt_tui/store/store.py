"""The local checkpoint store: folders on disk plus a SQLite metadata index.

Layout and safety rules: `layout.py`; metadata: `meta.py`; in-memory index: `index.py`;
noticing outside changes: `core.py`; crash-safe deletes: `trash.py`.

Ordering: runs by last_request_time, newest first (ties by id), where last_request_time is the
latest of the run's `created`, its newest live checkpoint's time, and the last change made to
its checkpoints through the store (add, delete, publish, unpublish, TTL; not the expiry sweep).
A run's checkpoints oldest first (ties by id); all checkpoints newest first (ties by tinker path).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType

from ckpt_tui.api_types import Checkpoint, TrainingRun, WeightsInfo
from ckpt_tui.clock import SYSTEM_CLOCK, Clock
from ckpt_tui.store import trash
from ckpt_tui.store.core import StoreCore, locked
from ckpt_tui.store.errors import ConflictError, InvalidRequestError, StoreError
from ckpt_tui.store.index import CheckpointEntry, RunEntry
from ckpt_tui.store.layout import (
    Layout,
    checked_checkpoint_id,
    checked_file_parts,
    checked_run_id,
    run_signature,
)
from ckpt_tui.store.meta import Row
from ckpt_tui.store.opening import open_meta, prepare_root
from ckpt_tui.store.runinfo import RunInfo, checked_extra, checked_metadata, write_run_info
from ckpt_tui.store.settle import SETTLE_SECONDS, SETTLED_BY_STORE, look_at, with_look
from ckpt_tui.store.times import to_us

MIN_TTL_SECONDS = 3600
MAX_TTL_SECONDS = 10 * 365 * 86400


class Store(StoreCore):
    """A checkpoint store rooted at a folder. Thread-safe: every public method holds one lock,
    except while listing reads discovered runs' files (see `_notice_changes_unlocked`)."""

    root: Path
    clock: Clock
    readonly: bool

    @classmethod
    def open(
        cls,
        root: Path,
        clock: Clock = SYSTEM_CLOCK,
        *,
        create: bool = True,
        readonly: bool | None = None,
        settle_seconds: float = SETTLE_SECONDS,
        lazy: bool = False,
    ) -> Store:
        """Open (creating when asked) a store: scan, reconcile, finish interrupted deletes, sweep.

        `readonly=None` detects whether the folder can be written; True forces browsing only
        (nothing on disk is changed, not even the metadata file); False insists on writing.
        A checkpoint is complete once its files have stayed the same for `settle_seconds`.
        `lazy=True` (browsing): a folder with no metadata file yet is left untouched until
        the first change, which makes `runs/` and `.ckpt-tui/`.
        """
        root = Path(root)
        readonly = prepare_root(root, create, readonly)
        layout = Layout(root)
        meta, unmade = open_meta(layout, readonly, lazy)
        store = cls(layout, clock, meta, readonly)
        store.settle_seconds = settle_seconds
        store.folders_unmade = unmade
        try:
            store._scan_all()
            store.sweep_expired()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        """Close the metadata file; later calls raise StoreError. Closing twice is fine."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._meta.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def rescan(self) -> None:
        """Look for outside changes now (listing everything does it at most once a second)."""
        if not self._notice_changes_unlocked(force=True):
            with self._lock:
                self._notice_changes(force=True)  # the store changed meanwhile: under the lock

    # --- reads -----------------------------------------------------------------------------
    def list_runs(
        self, offset: int = 0, limit: int | None = None, project_id: str | None = None
    ) -> tuple[list[TrainingRun], int]:
        """Runs (of one project, with `project_id`), newest activity first, and their count."""
        _check_page(offset, limit)
        self._notice_changes_unlocked()
        return self._runs_page(offset, limit, project_id)

    @locked
    def _runs_page(
        self, offset: int, limit: int | None, project_id: str | None
    ) -> tuple[list[TrainingRun], int]:
        self._index.hide_expired(self._now_us())
        runs = self._index.runs_by_activity()
        if project_id is not None:
            runs = [run for run in runs if run.info.project_id == project_id]
        end = None if limit is None else offset + limit
        return [run.training_run() for run in runs[offset:end]], len(runs)

    @locked
    def get_run(self, run_id: str) -> TrainingRun:
        return self._run(run_id).training_run()

    @locked
    def list_run_checkpoints(self, run_id: str) -> list[Checkpoint]:
        """A run's live checkpoints, oldest first. NotFoundError for an unknown run."""
        return [entry.checkpoint() for entry in self._run(run_id).oldest_first()]

    def list_checkpoints(self, offset: int = 0, limit: int = 100) -> tuple[list[Checkpoint], int]:
        """All live checkpoints, newest first, and the total count."""
        _check_page(offset, limit)
        self._notice_changes_unlocked()
        return self._checkpoints_page(offset, limit)

    @locked
    def _checkpoints_page(self, offset: int, limit: int) -> tuple[list[Checkpoint], int]:
        self._index.hide_expired(self._now_us())
        page = self._index.page(offset, limit)
        return [entry.checkpoint() for entry in page], self._index.total()

    @locked
    def get_checkpoint(self, run_id: str, checkpoint_id: str) -> Checkpoint:
        return self._entry(run_id, checkpoint_id).checkpoint()

    @locked
    def weights_info(self, run_id: str, checkpoint_id: str) -> WeightsInfo:
        """From the run's run.json; train_* from its extra keys when they are booleans."""
        self._entry(run_id, checkpoint_id)
        info = self._index.runs[run_id].info
        if info.corrupted:
            raise StoreError(
                f"run.json of training run {run_id!r} is missing or unreadable; "
                "fix or rewrite it to get weights info"
            )

        def flag(key: str) -> bool | None:
            value = info.extra.get(key)
            return value if isinstance(value, bool) else None

        return WeightsInfo(
            base_model=info.base_model,
            is_lora=info.is_lora,
            lora_rank=info.lora_rank,
            train_mlp=flag("train_mlp"),
            train_attn=flag("train_attn"),
            train_unembed=flag("train_unembed"),
        )

    @locked
    def checkpoint_dir(self, run_id: str, checkpoint_id: str) -> Path:
        """Where a live checkpoint's files are (e.g. to write large files, then refresh)."""
        return self._entry(run_id, checkpoint_id).path

    # --- writes ----------------------------------------------------------------------------
    @locked
    def create_run(
        self,
        run_id: str,
        base_model: str,
        *,
        is_lora: bool = True,
        lora_rank: int | None = None,
        model_owner: str = "local",
        user_metadata: dict[str, str] | None = None,
        created: datetime | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> TrainingRun:
        """Write `runs/<run_id>/run.json`; `extra` holds e.g. train_mlp/train_attn/train_unembed."""
        run_id = checked_run_id(run_id)
        if lora_rank is not None and (
            isinstance(lora_rank, bool) or not isinstance(lora_rank, int)
        ):
            raise InvalidRequestError(f"lora_rank must be an integer or None, got {lora_rank!r}")
        info = RunInfo(
            base_model=base_model,
            is_lora=is_lora,
            created_us=to_us(created or self.clock.now(), "created"),
            lora_rank=lora_rank,
            model_owner=model_owner,
            user_metadata=checked_metadata(user_metadata),
            extra=checked_extra(dict(extra or {})),
        )
        self._require_writable()
        self._check_run(run_id)
        run_dir = self._layout.run_dir(run_id)
        if run_id in self._index.runs or os.path.lexists(run_dir):
            raise ConflictError(f"training run {run_id!r} already exists")
        self._layout.runs.mkdir(exist_ok=True)
        self._layout.ensure_inside(run_dir)
        run_dir.mkdir()
        write_run_info(run_dir, info)
        run = RunEntry(run_id, run_dir, info, run_signature(run_dir))
        self._index.put_run(run, [], self._now_us())
        self._changes[run_id] += 1
        return run.training_run()

    @locked
    def add_checkpoint(
        self,
        run_id: str,
        checkpoint_id: str,
        files: Mapping[str, bytes] | None = None,
        *,
        created: datetime | None = None,
        expires_at: datetime | None = None,
        public: bool = False,
        user_metadata: dict[str, str] | None = None,
    ) -> Checkpoint:
        """Create a checkpoint folder with `files` (name -> bytes) and its metadata row.

        Names may contain '/' for subfolders. The files are written into the trash first and
        renamed into place, so a crash never leaves a half-written checkpoint. NotFoundError if
        the run does not exist (make it with `create_run`), ConflictError if the id is taken.
        """
        run_id = checked_run_id(run_id)
        checked_checkpoint_id(checkpoint_id)
        parts = [(checked_file_parts(name), data) for name, data in (files or {}).items()]
        row = Row(
            run_id,
            checkpoint_id,
            to_us(created or self.clock.now(), "created"),
            None if expires_at is None else to_us(expires_at, "expires_at"),
            bool(public),
            checked_metadata(user_metadata),
        )
        self._require_writable()
        run = self._run(run_id)
        if run.discovered:
            raise InvalidRequestError(
                f"training run {run_id!r} is a folder found on disk ({run.path}); add checkpoints "
                "to it by writing them there, or to a run made with create_run"
            )
        dest = self._layout.checkpoint_dir(run_id, checkpoint_id)
        if (run_id, checkpoint_id) in self._index.expired or os.path.lexists(dest):
            raise ConflictError(f"checkpoint {checkpoint_id!r} already exists in run {run_id!r}")
        self._write_files(dest, parts)
        row = with_look(row, look_at(str(dest)), SETTLED_BY_STORE)
        entry = CheckpointEntry(row, str(dest))
        now_us = self._now_us()
        self._meta.apply(upsert=[row], touch={run_id: now_us})
        self._changes[run_id] += 1
        self._index.add(entry, now_us)
        self._touch(run, now_us)
        run.signature = run_signature(run.path)
        return entry.checkpoint()

    def _write_files(self, dest: Path, parts: list[tuple[list[str], bytes]]) -> None:
        """Stage the files in the trash, rename the folder to `dest`."""
        self._layout.ensure_inside(dest.parent)
        dest.parent.mkdir(exist_ok=True)
        self._layout.ensure_inside(dest)
        stage = trash.new_slot(self._layout, ".new")
        try:
            for names, data in parts:
                target = stage.joinpath(*names)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            os.rename(stage, dest)
        except OSError as exc:
            trash.purge(self._layout, stage)
            raise StoreError(f"cannot write checkpoint {dest.name}: {exc}") from exc

    @locked
    def delete_checkpoint(self, run_id: str, checkpoint_id: str) -> None:
        """Crash-safe delete: rename into trash, commit metadata, remove files."""
        self._require_writable()
        entry = self._entry(run_id, checkpoint_id)
        users = self._adapters_based_on(entry)
        if users:
            raise ConflictError(
                f"refusing to delete {entry.tinker_path}: it is the base model of "
                f"{', '.join(users[:3])}; delete those adapters first"
            )
        self._delete_entry(entry, touch=True)

    @locked
    def set_public(self, run_id: str, checkpoint_id: str, public: bool) -> Checkpoint:
        """ConflictError when already in that state."""
        self._require_writable()
        entry = self._entry(run_id, checkpoint_id)
        if public:
            self._refuse_incomplete(entry, "publishing")
        if entry.row.public == public:
            state = "public" if public else "private"
            raise ConflictError(f"checkpoint {entry.tinker_path} is already {state}")
        self._commit_row(entry, replace(entry.row, public=bool(public)))
        return entry.checkpoint()

    @locked
    def set_ttl(self, run_id: str, checkpoint_id: str, ttl_seconds: int | None) -> Checkpoint:
        """expires_at = now + ttl; None clears it. InvalidRequestError unless 3600 <= ttl <= 10y."""
        if ttl_seconds is not None and (
            isinstance(ttl_seconds, bool)
            or not isinstance(ttl_seconds, int)
            or not MIN_TTL_SECONDS <= ttl_seconds <= MAX_TTL_SECONDS
        ):
            raise InvalidRequestError(
                f"ttl_seconds must be an integer from {MIN_TTL_SECONDS} (1 hour) to "
                f"{MAX_TTL_SECONDS} (10 years), or null to remove the expiry; got {ttl_seconds!r}"
            )
        self._require_writable()
        entry = self._entry(run_id, checkpoint_id)
        if ttl_seconds is not None:
            self._refuse_incomplete(entry, "a TTL")
        expires_us = None if ttl_seconds is None else self._now_us() + ttl_seconds * 1_000_000
        self._commit_row(entry, replace(entry.row, expires_us=expires_us))
        return entry.checkpoint()

    def _refuse_incomplete(self, entry: CheckpointEntry, what: str) -> None:
        if entry.incomplete:
            reason = (entry.facts or {}).get("incomplete_reason", "still being written")
            raise ConflictError(
                f"checkpoint {entry.tinker_path} is incomplete ({reason}); {what} is refused "
                "while a save may still be writing it: wait until it is complete (its files "
                "stay the same), or delete it yourself"
            )

    @locked
    def refresh_checkpoint(self, run_id: str, checkpoint_id: str) -> Checkpoint:
        """Re-measure a checkpoint whose files the caller has finished writing: complete now."""
        self._require_writable()
        entry = self._entry(run_id, checkpoint_id)
        row = with_look(entry.row, look_at(entry.location), SETTLED_BY_STORE)
        if row is not entry.row or entry.incomplete:
            if not self._index.runs[entry.row.run_id].discovered:
                entry.facts = None  # discovered facts are read again on the next rescan
            self._commit_row(entry, row, touch=False)
        return entry.checkpoint()

    def sweep_expired(self) -> list[str]:
        """Delete every checkpoint past expires_at; return their tinker paths.

        A read-only store cannot delete: it only hides them, and this returns []. A checkpoint
        whose files cannot be removed stays hidden and is retried on the next sweep.
        """
        if self.readonly:
            return []
        self._notice_changes_unlocked(force=True)  # the slow reading, without the lock
        return self._sweep()

    @locked
    def _sweep(self) -> list[str]:
        self._notice_changes(force=True)  # saves that settled since the last look
        self._index.hide_expired(self._now_us())
        for run_id in sorted({entry.row.run_id for entry in self._index.expired.values()}):
            self._rescan_run(run_id)  # a checkpoint whose files changed again is not deleted
        self._index.hide_expired(self._now_us())
        removed: list[str] = []
        for entry in sorted(self._index.expired.values(), key=lambda e: e.tinker_path):
            try:
                self._delete_entry(entry, touch=False)
            except StoreError:
                continue
            removed.append(entry.tinker_path)
        return removed


def _check_page(offset: int, limit: int | None) -> None:
    if offset < 0 or (limit is not None and limit < 0):
        raise InvalidRequestError(f"offset and limit must be >= 0, got {offset} and {limit}")
