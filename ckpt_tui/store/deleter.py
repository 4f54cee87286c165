"""Deletion: the crash-safe delete of `trash.DELETE_STEPS`, the refusal to delete a base model
that discovered adapters still use, and the sweep of expired checkpoints.

Every method runs under the store's lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from ckpt_tui.store import trash
from ckpt_tui.store.errors import ConflictError, NotFoundError, StoreError
from ckpt_tui.store.index import CheckpointEntry
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.storage import is_storage_failure, storage_error, storage_errors
from ckpt_tui.store.watcher import Watcher

logger = logging.getLogger("ckpt_tui.store")

PURGERS = 8
"""Threads removing the files of a batch of deletes side by side (`Deleter.purge_all`)."""


class Deleter:
    """Removes checkpoints' files and records, one crash-safe step at a time."""

    def __init__(self, layout: Layout, ledger: Ledger, watcher: Watcher) -> None:
        self.step_hook: Callable[[str], None] | None = None
        """Called after each of `trash.DELETE_STEPS`; tests raise from it to simulate a crash."""
        self._layout = layout
        self._ledger = ledger
        self._watcher = watcher
        self._spares = trash.SpareSlots(layout)
        self._pool: ThreadPoolExecutor | None = None
        self._purging: set[Future[None]] = set()
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Finish the background purges, then remove the spare slots (`trash.SpareSlots`)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self._spares.close()

    def delete_checkpoint(self, entry: CheckpointEntry) -> Path:
        """Delete one checkpoint asked for by name; ConflictError if adapters are based on it.
        Returns the trash slot holding its files, for `purge` (which needs no lock)."""
        users = self._adapters_based_on(entry)
        if users:
            raise ConflictError(
                f"refusing to delete {entry.tinker_path}: it is the base model of "
                f"{', '.join(users[:3])}; delete those adapters first"
            )
        return self.delete(entry, touch=True)

    def sweep(self) -> list[str]:
        """Delete every checkpoint past expires_at (files unchanged); return their tinker paths."""
        self._watcher.notice_changes(force=True)  # saves that settled since the last look
        self._ledger.hide_expired()
        expired = self._ledger.index.expired
        for run_id in sorted({entry.row.run_id for entry in expired.values()}):
            self._watcher.rescan_run(run_id)  # a checkpoint whose files changed again is kept
        self._ledger.hide_expired()
        removed: list[str] = []
        for entry in sorted(self._ledger.index.expired.values(), key=lambda e: e.tinker_path):
            try:
                slot = self.delete(entry, touch=False)
            except StoreError:
                continue
            self.purge(entry, slot)
            removed.append(entry.tinker_path)
        return removed

    def delete(self, entry: CheckpointEntry, touch: bool) -> Path:
        """Steps 1-3 of `trash.DELETE_STEPS`; NotFoundError if its files vanished. Returns the
        slot holding the files, which `purge` removes.

        The answer and the state agree: a step that fails (a full disk, an I/O error, a locked
        metadata file) undoes the steps before it and raises a StorageError; once the commit
        is done the checkpoint is deleted, so a failed purge only leaves the slot to `recover`.
        """
        run_id, checkpoint_id = entry.key
        doing = f"deleting {entry.tinker_path}"
        with storage_errors(doing):
            spare = self._spares.take()
            trash_fd = self._spares.trash_fd()
            slot = trash.prepare(self._layout, run_id, checkpoint_id, entry.path, spare, trash_fd)
        self._step("prepare")
        self._move(entry, slot, doing)
        self._step("move")
        self._commit(entry, slot, touch, doing)
        self._step("commit")
        return slot

    def purge_later(self, deleted: Sequence[tuple[CheckpointEntry, Path]]) -> None:
        """`purge` each committed delete in the background, several at a time (each `rmdir`
        waits for the file system's journal, ~2 ms here, and such waits overlap). `close`
        waits for them; a crash before leaves the slots to `recover` at the next open."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(PURGERS, thread_name_prefix="ckpt-tui-purge")
            purges = [self._pool.submit(self.purge, entry, slot) for entry, slot in deleted]
            self._purging.update(purges)
        for purge in purges:  # outside the lock: a purge already done calls back at once
            purge.add_done_callback(self._purged)

    def wait_for_purges(self) -> None:
        """Wait until the files of every delete committed so far are removed."""
        with self._pool_lock:
            purging = list(self._purging)
        wait(purging)

    def _purged(self, purge: Future[None]) -> None:
        with self._pool_lock:
            self._purging.discard(purge)
        _log_failure(purge)

    def purge(self, entry: CheckpointEntry, slot: Path) -> None:
        """Step 4: empty the slot of a committed delete and keep it for the next. It touches
        only the slot, so it needs no lock: removing folders is what a delete spent most of
        its time on (each `rmdir` waits for the file system's journal), and purges done
        outside the lock no longer hold up the deletes behind them."""
        try:
            trash.empty(self._layout, slot, self._spares.trash_fd())
            self._spares.give_back(slot)
        except (OSError, StoreError) as exc:
            logger.warning(
                "%s: its files stay in %s until the store is next opened: %s",
                entry.tinker_path,
                slot,
                exc,
            )
        self._step("purge")

    def _move(self, entry: CheckpointEntry, slot: Path, doing: str) -> None:
        """Step 2, or the slot removed again and an error saying why."""
        run_id, checkpoint_id = entry.key
        try:
            trash.move(self._layout, entry.path, slot, self._spares.trash_fd())
        except FileNotFoundError:
            trash.purge(self._layout, slot)
            self._watcher.rescan_run(run_id)
            raise NotFoundError(
                f"checkpoint {checkpoint_id!r} not found in run {run_id!r}"
            ) from None
        except (OSError, StoreError) as exc:
            trash.purge(self._layout, slot)
            if isinstance(exc, StoreError):
                raise
            if is_storage_failure(exc):
                raise storage_error(exc, doing) from exc
            raise StoreError(f"cannot delete {entry.tinker_path}: {exc.strerror}") from exc

    def _commit(self, entry: CheckpointEntry, slot: Path, touch: bool, doing: str) -> None:
        """Step 3; if the metadata cannot be written, the files go back where they were."""
        try:
            self._ledger.commit_delete(entry, touch)
        except sqlite3.Error as exc:  # rolled back: the row and the index are as they were
            trash.restore(self._layout, slot, entry.path)
            if is_storage_failure(exc):
                raise storage_error(exc, doing) from exc
            raise

    def _adapters_based_on(self, entry: CheckpointEntry) -> list[str]:
        """Tinker paths of discovered adapters whose base_model is `entry`'s folder (or in it)."""
        adapters = [
            (other, base)
            for run in self._ledger.index.runs.values()
            if run.discovered
            for other in run.checkpoints.values()
            if other is not entry and (base := (other.facts or {}).get("base_model", ""))
        ]
        if not adapters:  # the common case: no folder to resolve (a delete's every call counts)
            return []
        try:
            target = entry.path.resolve()
        except OSError:  # a link swapped while it was read (realpath's readlink is unguarded)
            target = entry.path.absolute()
        return sorted(
            other.tinker_path for other, base in adapters if _is_inside(base, other.path, target)
        )

    def _step(self, name: str) -> None:
        if self.step_hook is not None:
            self.step_hook(name)


def _is_inside(base: str, adapter: Path, target: Path) -> bool:
    """Whether the base model path `base` (absolute, or relative to the adapter or the
    working directory) is `target` or inside it. Hub names ("org/model") resolve nowhere."""
    for candidate in (Path(base), adapter / base):
        if candidate.exists():
            real = candidate.resolve()
            if real == target or target in real.parents:
                return True
    return False


def _log_failure(done: Future[None]) -> None:
    """A background purge's unexpected failure (its expected ones are logged by `purge`)."""
    failure = done.exception()
    if failure is not None:
        logger.error("removing a deleted checkpoint's files failed", exc_info=failure)
