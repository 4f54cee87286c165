"""Metadata changes: new runs and checkpoints, publishing, TTLs, and re-measuring.

Arguments are checked before the store is asked to be writable, and that before a lookup, so a
bad request is refused the same way on any store. Every method runs under the store's lock.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from msgspec.structs import replace

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.store import trash
from ckpt_tui.store.errors import (
    ConflictError,
    InvalidRequestError,
    ReadOnlyStoreError,
    StoreError,
)
from ckpt_tui.store.index import CheckpointEntry, RunEntry
from ckpt_tui.store.layout import (
    Layout,
    checked_checkpoint_id,
    checked_file_parts,
    checked_run_id,
    run_signature,
)
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.meta import Row
from ckpt_tui.store.opening import make_folders
from ckpt_tui.store.runinfo import RunInfo, checked_extra, checked_metadata, write_run_info
from ckpt_tui.store.settle import SETTLED_BY_STORE, look_at, with_look
from ckpt_tui.store.storage import is_storage_failure, storage_error
from ckpt_tui.store.times import to_us
from ckpt_tui.store.watcher import Watcher
from ckpt_tui.timekeeping.ttl import MAX_TTL_SECONDS, MIN_TTL_SECONDS


class Writer:
    """Changes runs and checkpoints through the ledger; refuses all of it on a read-only store."""

    def __init__(
        self, layout: Layout, ledger: Ledger, watcher: Watcher, readonly: bool, unmade: bool
    ) -> None:
        self.readonly = readonly
        self.folders_unmade = unmade
        """True while a lazily opened store has written nothing yet (see `Store.open`)."""
        self._layout = layout
        self._ledger = ledger
        self._watcher = watcher

    def require_writable(self) -> None:
        """ReadOnlyStoreError on a read-only store; a lazy store makes its folders now."""
        if self.readonly:
            raise ReadOnlyStoreError(
                f"the store at {self._layout.root} is read-only (its folder cannot be written): "
                "browsing works, but to change checkpoints make the folder writable and reopen"
            )
        if self.folders_unmade:
            make_folders(self._layout)
            self._ledger.meta.persist(self._layout.meta_file)
            self.folders_unmade = False

    def create_run(
        self,
        run_id: str,
        base_model: str,
        *,
        is_lora: bool,
        lora_rank: int | None,
        model_owner: str,
        user_metadata: dict[str, str] | None,
        created: datetime | None,
        extra: Mapping[str, object] | None,
    ) -> TrainingRun:
        run_id = checked_run_id(run_id)
        if lora_rank is not None and (
            isinstance(lora_rank, bool) or not isinstance(lora_rank, int)
        ):
            raise InvalidRequestError(f"lora_rank must be an integer or None, got {lora_rank!r}")
        info = RunInfo(
            base_model=base_model,
            is_lora=is_lora,
            created_us=to_us(created or self._ledger.clock.now(), "created"),
            lora_rank=lora_rank,
            model_owner=model_owner,
            user_metadata=checked_metadata(user_metadata),
            extra=checked_extra(dict(extra or {})),
        )
        self.require_writable()
        self._watcher.check_run(run_id)
        run_dir = self._layout.run_dir(run_id)
        if run_id in self._ledger.index.runs or os.path.lexists(run_dir):
            raise ConflictError(f"training run {run_id!r} already exists")
        self._layout.runs.mkdir(exist_ok=True)
        self._layout.ensure_inside(run_dir)
        run_dir.mkdir()
        try:
            write_run_info(run_dir, info)
        except OSError:
            trash.purge(self._layout, run_dir)  # a run that failed to be made is not there
            raise
        run = RunEntry(run_id, run_dir, info, run_signature(run_dir))
        self._ledger.add_run(run)
        return run.training_run()

    def add_checkpoint(
        self,
        run_id: str,
        checkpoint_id: str,
        files: Mapping[str, bytes] | None,
        *,
        created: datetime | None,
        expires_at: datetime | None,
        public: bool,
        user_metadata: dict[str, str] | None,
    ) -> Checkpoint:
        run_id = checked_run_id(run_id)
        checked_checkpoint_id(checkpoint_id)
        parts = [(checked_file_parts(name), data) for name, data in (files or {}).items()]
        row = Row(
            run_id,
            checkpoint_id,
            to_us(created or self._ledger.clock.now(), "created"),
            None if expires_at is None else to_us(expires_at, "expires_at"),
            bool(public),
            checked_metadata(user_metadata),
        )
        self.require_writable()
        run = self._watcher.live_run(run_id)
        if run.discovered:
            raise InvalidRequestError(
                f"training run {run_id!r} is a folder found on disk ({run.path}); add checkpoints "
                "to it by writing them there, or to a run made with create_run"
            )
        dest = self._layout.checkpoint_dir(run_id, checkpoint_id)
        if (run_id, checkpoint_id) in self._ledger.index.expired or os.path.lexists(dest):
            raise ConflictError(f"checkpoint {checkpoint_id!r} already exists in run {run_id!r}")
        self._write_files(dest, parts)
        entry = CheckpointEntry(with_look(row, look_at(str(dest)), SETTLED_BY_STORE), str(dest))
        try:
            self._ledger.add_checkpoint(entry)
        except sqlite3.Error:
            trash.purge(self._layout, dest)  # no row, no files: the add did not happen
            raise
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
            if is_storage_failure(exc):
                raise storage_error(exc, f"writing checkpoint {dest.name}") from exc
            raise StoreError(f"cannot write checkpoint {dest.name}: {exc}") from exc

    def set_public(self, run_id: str, checkpoint_id: str, public: bool) -> Checkpoint:
        self.require_writable()
        entry = self._watcher.live_entry(run_id, checkpoint_id)
        if public:
            _refuse_incomplete(entry, "publishing")
        if entry.row.public == public:
            state = "public" if public else "private"
            raise ConflictError(f"checkpoint {entry.tinker_path} is already {state}")
        self._ledger.commit_row(entry, replace(entry.row, public=bool(public)))
        return entry.checkpoint()

    def set_ttl(self, run_id: str, checkpoint_id: str, ttl_seconds: int | None) -> Checkpoint:
        if ttl_seconds is not None and (
            isinstance(ttl_seconds, bool)
            or not isinstance(ttl_seconds, int)
            or not MIN_TTL_SECONDS <= ttl_seconds <= MAX_TTL_SECONDS
        ):
            raise InvalidRequestError(
                f"ttl_seconds must be an integer from {MIN_TTL_SECONDS} (1 hour) to "
                f"{MAX_TTL_SECONDS} (10 years), or null to remove the expiry; got {ttl_seconds!r}"
            )
        self.require_writable()
        entry = self._watcher.live_entry(run_id, checkpoint_id)
        if ttl_seconds is not None:
            _refuse_incomplete(entry, "a TTL")
        now_us = self._ledger.now_us()
        expires_us = None if ttl_seconds is None else now_us + ttl_seconds * 1_000_000
        self._ledger.commit_row(entry, replace(entry.row, expires_us=expires_us))
        return entry.checkpoint()

    def refresh_checkpoint(self, run_id: str, checkpoint_id: str) -> Checkpoint:
        self.require_writable()
        entry = self._watcher.live_entry(run_id, checkpoint_id)
        row = with_look(entry.row, look_at(entry.location), SETTLED_BY_STORE)
        if row is not entry.row or entry.incomplete:
            if not self._ledger.index.runs[entry.row.run_id].discovered:
                entry.facts = None  # discovered facts are read again on the next rescan
            self._ledger.commit_row(entry, row, touch=False)
        return entry.checkpoint()


def _refuse_incomplete(entry: CheckpointEntry, what: str) -> None:
    if entry.incomplete:
        reason = (entry.facts or {}).get("incomplete_reason", "still being written")
        raise ConflictError(
            f"checkpoint {entry.tinker_path} is incomplete ({reason}); {what} is refused "
            "while a save may still be writing it: wait until it is complete (its files "
            "stay the same), or delete it yourself"
        )
