"""The local checkpoint store: folders on disk plus a SQLite metadata index.

`Store` is the public API; it owns small collaborators, each with one job, and holds the one
lock (`guard.py`) while they work:
- `Ledger` (`ledger.py`): the in-memory index (`index.py`) and the metadata (`meta.py`), changed
  together;
- `Watcher` (`watcher.py`): discovery, bringing the ledger in line with the folders (reading
  discovered runs' files without the lock) and finding live runs;
- `Writer` (`writer.py`): metadata changes (runs, checkpoints, publishing, TTLs);
- `Deleter` (`deleter.py`): crash-safe deletes (`trash.py`) and the expiry sweep.
Layout and safety rules: `layout.py`.

Ordering: runs by last_request_time, newest first (ties by id), where last_request_time is the
latest of the run's `created`, its newest live checkpoint's time, and the last change made to
its checkpoints through the store (add, delete, publish, unpublish, TTL; not the expiry sweep).
A run's checkpoints oldest first (ties by id); all checkpoints newest first (ties by tinker path).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from msgspec import Raw

from ckpt_tui.api_types import Checkpoint, TrainingRun, WeightsInfo
from ckpt_tui.store import export
from ckpt_tui.store.deleter import Deleter
from ckpt_tui.store.errors import (
    InvalidRequestError,
    StoreError,
    checkpoint_not_found,
)
from ckpt_tui.store.export import CheckpointFile, OpenedFile, ServedFile
from ckpt_tui.store.guard import Guard, locked
from ckpt_tui.store.index import CheckpointEntry
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.meta import MetaDB
from ckpt_tui.store.opening import open_meta, prepare_root
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.store.storage import storage_errors
from ckpt_tui.store.unread import ReadProblems
from ckpt_tui.store.watcher import Watcher
from ckpt_tui.store.writer import Writer
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock

T = TypeVar("T")


class Store:
    """A checkpoint store rooted at a folder. Thread-safe: every public method holds one lock,
    except while listing reads discovered runs' files (see `Watcher.notice_changes_unlocked`)."""

    def __init__(
        self,
        layout: Layout,
        clock: Clock,
        meta: MetaDB,
        readonly: bool,
        *,
        unmade: bool = False,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        self.root: Path = layout.root
        self.clock = clock
        self.guard = Guard(layout.root)
        self._layout = layout
        self._ledger = Ledger(meta, clock)
        self._watcher = Watcher(layout, self._ledger, self.guard, settle_seconds)
        self._writer = Writer(layout, self._ledger, self._watcher, readonly, unmade)
        self._deleter = Deleter(layout, self._ledger, self._watcher)

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
        store = cls(layout, clock, meta, readonly, unmade=unmade, settle_seconds=settle_seconds)
        try:
            with store.guard.held():
                store._watcher.scan_all()
            store.sweep_expired()
        except BaseException:
            store.close()
            raise
        return store

    # --- settings (kept on the collaborator that uses them) ---------------------------------
    @property
    def readonly(self) -> bool:
        return self._writer.readonly

    @property
    def store_id(self) -> str:
        """This store's id: kept in its metadata, or derived from the folder while none is
        kept (see `MetaDB.store_id`): the server reports it in its health check."""
        return self._ledger.meta.store_id

    @property
    def recheck_interval(self) -> float:
        """Seconds between checks for outside changes when listing everything."""
        return self._watcher.recheck_interval

    @recheck_interval.setter
    def recheck_interval(self, seconds: float) -> None:
        self._watcher.recheck_interval = seconds

    @property
    def delete_step_hook(self) -> Callable[[str], None] | None:
        """Called after each of `trash.DELETE_STEPS`; tests raise from it to simulate a crash."""
        return self._deleter.step_hook

    @delete_step_hook.setter
    def delete_step_hook(self, hook: Callable[[str], None] | None) -> None:
        self._deleter.step_hook = hook

    def close(self) -> None:
        """Close the metadata file; later calls raise StoreError. Closing twice is fine."""
        with self.guard.lock:
            if not self.guard.closed:
                self.guard.closed = True
                self._ledger.meta.close()
                self._deleter.close()  # waits for the files of the last deletes to go

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def rescan(self) -> None:
        """Look for outside changes now (listing everything does it at most once a second)."""
        if not self._watcher.notice_changes_unlocked(force=True):
            with self.guard.held():
                self._watcher.notice_changes(force=True)  # the store changed meanwhile

    # --- reads -----------------------------------------------------------------------------
    def list_runs(
        self, offset: int = 0, limit: int | None = None, project_id: str | None = None
    ) -> tuple[list[TrainingRun], int]:
        """Runs (of one project, with `project_id`), newest activity first, and their count."""
        runs, total, _ = self.read_runs(offset, limit, project_id)
        return runs, total

    def read_runs(
        self, offset: int = 0, limit: int | None = None, project_id: str | None = None
    ) -> tuple[list[TrainingRun], int, ReadProblems]:
        """`list_runs`, and what the store could not read at that moment (the page and the
        problems are one look: a page read while a folder was unreadable says so)."""
        _check_page(offset, limit)
        self._watcher.notice_changes_unlocked()
        return self._runs_page(offset, limit, project_id)

    @locked
    def _runs_page(
        self, offset: int, limit: int | None, project_id: str | None
    ) -> tuple[list[TrainingRun], int, ReadProblems]:
        self._ledger.hide_expired()
        runs = self._ledger.index.runs_by_activity()
        if project_id is not None:
            runs = [run for run in runs if run.info.project_id == project_id]
        end = None if limit is None else offset + limit
        page = [run.training_run() for run in runs[offset:end]]
        return page, len(runs), self._watcher.problems()

    @locked
    def problems(self) -> ReadProblems:
        """What the store could not read (its lists are then not whole), or will not."""
        return self._watcher.problems()

    @locked
    def get_run(self, run_id: str) -> TrainingRun:
        return self._watcher.live_run(run_id).training_run()

    @locked
    def list_run_checkpoints(self, run_id: str) -> list[Checkpoint]:
        """A run's live checkpoints, oldest first. NotFoundError for an unknown run."""
        return [entry.checkpoint() for entry in self._watcher.live_run(run_id).oldest_first()]

    def list_checkpoints(self, offset: int = 0, limit: int = 100) -> tuple[list[Checkpoint], int]:
        """All live checkpoints, newest first, and the total count."""
        checkpoints, total, _ = self._page(offset, limit, CheckpointEntry.checkpoint)
        return checkpoints, total

    def encoded_checkpoints(self, offset: int = 0, limit: int = 100) -> tuple[list[Raw], int]:
        """`list_checkpoints` with each checkpoint as its JSON (the server's answer)."""
        checkpoints, total, _ = self.read_encoded_checkpoints(offset, limit)
        return checkpoints, total

    def read_encoded_checkpoints(
        self, offset: int = 0, limit: int = 100
    ) -> tuple[list[Raw], int, ReadProblems]:
        """`encoded_checkpoints`, and what the store could not read then (see `read_runs`)."""
        return self._page(offset, limit, CheckpointEntry.encoded)

    def _page(
        self, offset: int, limit: int, each: Callable[[CheckpointEntry], T]
    ) -> tuple[list[T], int, ReadProblems]:
        _check_page(offset, limit)
        self._watcher.notice_changes_unlocked()
        return self._live_page(offset, limit, each)

    @locked
    def _live_page(
        self, offset: int, limit: int, each: Callable[[CheckpointEntry], T]
    ) -> tuple[list[T], int, ReadProblems]:
        self._ledger.hide_expired()
        index = self._ledger.index
        page = [each(entry) for entry in index.page(offset, limit)]
        return page, index.total(), self._watcher.problems()

    @locked
    def get_checkpoint(self, run_id: str, checkpoint_id: str) -> Checkpoint:
        return self._watcher.live_entry(run_id, checkpoint_id).checkpoint()

    @locked
    def weights_info(self, run_id: str, checkpoint_id: str) -> WeightsInfo:
        """From the run's run.json; train_* from its extra keys when they are booleans."""
        self._watcher.live_entry(run_id, checkpoint_id)
        info = self._ledger.index.runs[run_id].info
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
        return self._watcher.live_entry(run_id, checkpoint_id).path

    def checkpoint_files(self, run_id: str, checkpoint_id: str) -> list[CheckpointFile]:
        """A live checkpoint's regular files and their sizes (for signed downloads)."""
        return export.list_files(str(self.root), self._readable_rel(run_id, checkpoint_id))

    def open_checkpoint_file(self, run_id: str, checkpoint_id: str, name: str) -> ServedFile:
        """One of a live checkpoint's files, opened for reading without following links."""
        rel = self._readable_rel(run_id, checkpoint_id)
        return OpenedFile(export.open_file(str(self.root), rel, name))

    def _readable_rel(self, run_id: str, checkpoint_id: str) -> str:
        """A live checkpoint's path below the store's folder (each part of it is opened
        without following links: `ckpt_tui.store.export`)."""
        folder = self.checkpoint_dir(run_id, checkpoint_id)
        self._layout.ensure_inside(folder)
        try:
            return folder.relative_to(self.root).as_posix()
        except ValueError:
            raise StoreError(f"refusing to read {folder}: it is not inside the store") from None

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
        with storage_errors(f"creating training run {run_id!r}"):
            return self._writer.create_run(
                run_id,
                base_model,
                is_lora=is_lora,
                lora_rank=lora_rank,
                model_owner=model_owner,
                user_metadata=user_metadata,
                created=created,
                extra=extra,
            )

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
        with storage_errors(f"adding checkpoint {checkpoint_id!r} to run {run_id!r}"):
            return self._writer.add_checkpoint(
                run_id,
                checkpoint_id,
                files,
                created=created,
                expires_at=expires_at,
                public=public,
                user_metadata=user_metadata,
            )

    def delete_checkpoint(self, run_id: str, checkpoint_id: str) -> None:
        """Crash-safe delete: rename into trash, commit metadata (under the lock), then remove
        the files (without it: see `Deleter.purge`). Returns once the files are gone."""
        with self.guard.held():
            ((entry, outcome),) = self._stage_deletes([(run_id, checkpoint_id)])
        if isinstance(outcome, Exception):
            raise outcome
        assert entry is not None
        self._deleter.purge(entry, outcome)

    def delete_checkpoints(self, keys: Sequence[tuple[str, str]]) -> list[Exception | None]:
        """Delete each (run_id, checkpoint_id) under one hold of the lock; returns each one's
        error (None: deleted), one failing changing nothing for the others: the outcomes are
        those of deleting them one by one in this order (a key asked for twice: the second is
        not found). All are one crash-safe batch (`trash.DELETE_STEPS`: one intent record,
        one metadata transaction).

        Returns once each is committed (gone from the metadata, its files in the trash: a
        crash now still completes it at the next open); the files are removed in the
        background (`Deleter.purge_later`, finished by `close`). The server gathers the
        deletes asked for at the same time into one call (`ckpt_tui.server.deletes`)."""
        with self.guard.held():
            staged = self._stage_deletes(keys)
        self._deleter.purge_later(
            [
                (entry, slot)
                for entry, slot in staged
                if entry is not None and isinstance(slot, Path)
            ]
        )
        return [outcome if isinstance(outcome, Exception) else None for _, outcome in staged]

    def wait_for_purges(self) -> None:
        """Wait until the files of every delete answered so far (`delete_checkpoints`) are
        gone from the trash too."""
        self._deleter.wait_for_purges()

    def _stage_deletes(
        self, keys: Sequence[tuple[str, str]]
    ) -> list[tuple[CheckpointEntry | None, Path | Exception]]:
        """Steps 1-3 of the deletes (under the lock): each one's entry (None if not found)
        and the slot holding its files, or its error. Each run is checked for outside changes
        once, before any file moves."""
        found: list[CheckpointEntry | Exception] = []
        leaving: dict[tuple[str, str], CheckpointEntry] = {}
        checked: set[str] = set()  # runs looked at for outside changes during this call
        for run_id, checkpoint_id in keys:
            try:
                with storage_errors(f"deleting checkpoint {checkpoint_id!r} of run {run_id!r}"):
                    self._writer.require_writable()
                    entry = self._watcher.live_entry(run_id, checkpoint_id, run_id not in checked)
                checked.add(run_id)
                if entry.key in leaving:  # as if done one by one: the first one deleted it
                    raise checkpoint_not_found(run_id, checkpoint_id)
                self._deleter.refuse_base_model(entry, leaving)
            except Exception as exc:  # this one's answer; the others' stand as they are
                found.append(exc)
                continue
            leaving[entry.key] = entry
            found.append(entry)
        outcomes = iter(self._deleter.delete_all(list(leaving.values()), touch=True))
        return [
            (item, next(outcomes)) if isinstance(item, CheckpointEntry) else (None, item)
            for item in found
        ]

    @locked
    def set_public(self, run_id: str, checkpoint_id: str, public: bool) -> Checkpoint:
        """ConflictError when already in that state."""
        doing = "publishing" if public else "unpublishing"
        with storage_errors(f"{doing} checkpoint {checkpoint_id!r} of run {run_id!r}"):
            return self._writer.set_public(run_id, checkpoint_id, public)

    @locked
    def set_ttl(self, run_id: str, checkpoint_id: str, ttl_seconds: int | None) -> Checkpoint:
        """expires_at = now + ttl; None clears it. InvalidRequestError unless 3600 <= ttl <= 10y."""
        with storage_errors(f"setting the TTL of checkpoint {checkpoint_id!r} of run {run_id!r}"):
            return self._writer.set_ttl(run_id, checkpoint_id, ttl_seconds)

    @locked
    def refresh_checkpoint(self, run_id: str, checkpoint_id: str) -> Checkpoint:
        """Re-measure a checkpoint whose files the caller has finished writing: complete now."""
        with storage_errors(f"re-measuring checkpoint {checkpoint_id!r} of run {run_id!r}"):
            return self._writer.refresh_checkpoint(run_id, checkpoint_id)

    def sweep_expired(self) -> list[str]:
        """Delete every checkpoint past expires_at; return their tinker paths.

        A read-only store cannot delete: it only hides them, and this returns []. A checkpoint
        whose files cannot be removed stays hidden and is retried on the next sweep.
        """
        if self.readonly:
            return []
        self._watcher.notice_changes_unlocked(force=True)  # the slow reading, without the lock
        with self.guard.held():
            return self._deleter.sweep()


def _check_page(offset: int, limit: int | None) -> None:
    if offset < 0 or (limit is not None and limit < 0):
        raise InvalidRequestError(f"offset and limit must be >= 0, got {offset} and {limit}")
