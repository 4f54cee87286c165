"""Deletion: the crash-safe delete of `trash.DELETE_STEPS`, the refusal to delete a base model
that discovered adapters still use, and the sweep of expired checkpoints.

Every method runs under the store's lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Container, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import suppress
from pathlib import Path

from ckpt_tui.store import trash
from ckpt_tui.store.errors import ConflictError, NotFoundError, StoreError
from ckpt_tui.store.index import CheckpointEntry
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.ledger import Ledger
from ckpt_tui.store.storage import is_storage_failure, storage_error
from ckpt_tui.store.watcher import Watcher

logger = logging.getLogger("ckpt_tui.store")

PURGERS = 2
"""Threads removing the files of committed deletes side by side (`Deleter.purge_later`).

Two, not eight: each purger takes the interpreter lock between its system calls, and eight
took it from the deletes still being answered. `python benchmarks/bench_delete.py
--serve-only --reps 3`, 1,000 deletes at 32 in flight, turn about (2026-12-03): 8 purgers
771-1,054 deletes/s (median of 7 runs 971) and 1.14-1.49 ms of CPU a delete, 4 purgers 987,
2 purgers 1,075-1,354 (median 1,192) and 0.90-1.11 ms; 1 purger fell behind at 10,000
(files purged 0.25-1.12 s after the last answer, 2 purgers 0.02-0.39 s)."""


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

    def refuse_base_model(
        self, entry: CheckpointEntry, leaving: Container[tuple[str, str]]
    ) -> None:
        """ConflictError if discovered adapters (other than the keys in `leaving`, deleted in
        the same batch before it) are based on `entry`."""
        users = self._adapters_based_on(entry, leaving)
        if users:
            raise ConflictError(
                f"refusing to delete {entry.tinker_path}: it is the base model of "
                f"{', '.join(users[:3])}; delete those adapters first"
            )

    def sweep(self) -> list[str]:
        """Delete every checkpoint past expires_at (files unchanged); return their tinker paths."""
        self._watcher.notice_changes(force=True)  # saves that settled since the last look
        self._ledger.hide_expired()
        expired = self._ledger.index.expired
        for run_id in sorted({entry.row.run_id for entry in expired.values()}):
            self._watcher.rescan_run(run_id)  # a checkpoint whose files changed again is kept
        self._ledger.hide_expired()
        entries = sorted(self._ledger.index.expired.values(), key=lambda e: e.tinker_path)
        removed: list[str] = []
        for entry, outcome in zip(entries, self.delete_all(entries, touch=False), strict=True):
            if isinstance(outcome, Path):
                self.purge(entry, outcome)
                removed.append(entry.tinker_path)
        return removed

    def delete_all(
        self, entries: Sequence[CheckpointEntry], touch: bool
    ) -> list[Path | StoreError]:
        """Steps 1-3 of `trash.DELETE_STEPS` for each of `entries` (distinct, live) together:
        one intent record and one metadata transaction for all. Each one's outcome: the slot
        holding its files (for `purge`), or the error saying why it was not deleted
        (NotFoundError if its files vanished).

        The answer and the state agree: a step that fails (a full disk, an I/O error, a locked
        metadata file) undoes the steps before it for those it fails, and they get a
        StorageError; once the commit is done they are deleted, so a failed purge only leaves
        the slot to `recover`.
        """
        if not entries:
            return []
        try:
            trash_fd = self._spares.trash_fd()
            slots, intent = self._prepare(entries, trash_fd)
        except (OSError, StoreError) as exc:
            return [_failure(exc, entry) for entry in entries]
        self._step("prepare")
        outcomes: list[Path | StoreError] = []
        folders = trash.BatchFolders(self._layout)
        try:
            for entry, slot in zip(entries, slots, strict=True):
                outcomes.append(self._move(entry, slot, trash_fd, folders))
        finally:
            folders.close()
        moved = [(e, s) for e, s in zip(entries, outcomes, strict=True) if isinstance(s, Path)]
        try:
            trash.drop_intent(self._layout, intent, trash_fd)
            self._commit(moved, touch)
        except (OSError, sqlite3.Error) as exc:  # undone: the files are back where they were
            self._restore(moved, intent, trash_fd)
            failed = {id(entry): _failure(exc, entry) for entry, _ in moved}
            outcomes = [failed.get(id(e), o) for e, o in zip(entries, outcomes, strict=True)]
        else:
            self._step("commit")
        vanished = zip(entries, outcomes, strict=True)
        for run_id in sorted({entry.row.run_id for entry, o in vanished if _vanished(o)}):
            self._watcher.rescan_run(run_id)  # after the commit: the others' files are gone
        return outcomes

    def _prepare(
        self, entries: Sequence[CheckpointEntry], trash_fd: int | None
    ) -> tuple[list[Path], Path]:
        """Step 1: an empty slot for each, and the batch's intent; or nothing left over."""
        slots: list[Path] = []
        try:
            for _ in entries:
                slots.append(self._spares.take() or trash.new_slot(self._layout, "", trash_fd))
            deletes = [(s, *e.key, e.path) for e, s in zip(entries, slots, strict=True)]
            return slots, trash.write_intent(self._layout, deletes, trash_fd)
        except BaseException:
            for slot in slots:  # a full disk must not leave empty slots piling up
                self._spares.give_back(slot)
            raise

    def purge_later(self, deleted: Sequence[tuple[CheckpointEntry, Path]]) -> None:
        """`purge` each committed delete in the background, `PURGERS` at a time (each `rmdir`
        waits for the file system's journal, ~2 ms here, and such waits overlap). `close`
        waits for them; a crash before leaves the slots to `recover` at the next open.
        One task per thread, not per delete: handing each over cost a tenth of a delete's CPU."""
        shares = [deleted[first::PURGERS] for first in range(min(PURGERS, len(deleted)))]
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(PURGERS, thread_name_prefix="ckpt-tui-purge")
            purges = [self._pool.submit(self._purge_each, share) for share in shares]
            self._purging.update(purges)
        for purge in purges:  # outside the lock: a purge already done calls back at once
            purge.add_done_callback(self._purged)

    def _purge_each(self, deleted: Sequence[tuple[CheckpointEntry, Path]]) -> None:
        for entry, slot in deleted:
            self.purge(entry, slot)

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

    def _move(
        self, entry: CheckpointEntry, slot: Path, trash_fd: int | None, folders: trash.BatchFolders
    ) -> Path | StoreError:
        """Step 2 for one: its slot, or the slot given back and an error saying why."""
        run_id, checkpoint_id = entry.key
        try:
            trash.move(self._layout, entry.path, slot, trash_fd, folders)
        except FileNotFoundError:
            self._spares.give_back(slot)  # still empty
            return NotFoundError(f"checkpoint {checkpoint_id!r} not found in run {run_id!r}")
        except (OSError, StoreError) as exc:
            with suppress(OSError, StoreError):  # (it may hold a link moved in: see `move`)
                trash.purge(self._layout, slot)
            return _failure(exc, entry)
        self._step("move")
        return slot

    def _commit(self, moved: Sequence[tuple[CheckpointEntry, Path]], touch: bool) -> None:
        """Step 3: one transaction for the batch (rolled back on failure: the rows and the
        index are as they were)."""
        if moved:
            self._ledger.commit_deletes([entry for entry, _ in moved], touch)

    def _restore(
        self, moved: Sequence[tuple[CheckpointEntry, Path]], intent: Path, trash_fd: int | None
    ) -> None:
        """Undo step 2: the files go back where they were, and the intent is gone (it may be
        what failed to be removed: a second try, as `recover` would finish those deletes)."""
        for entry, slot in moved:
            trash.restore(self._layout, slot, entry.path)
        with suppress(FileNotFoundError):
            trash.drop_intent(self._layout, intent, trash_fd)

    def _adapters_based_on(
        self, entry: CheckpointEntry, leaving: Container[tuple[str, str]] = ()
    ) -> list[str]:
        """Tinker paths of discovered adapters whose base_model is `entry`'s folder (or in it)."""
        adapters = [
            (other, base)
            for run in self._ledger.index.runs.values()
            if run.discovered
            for other in run.checkpoints.values()
            if other is not entry
            and other.key not in leaving
            and (base := (other.facts or {}).get("base_model", ""))
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


def _failure(exc: OSError | StoreError | sqlite3.Error, entry: CheckpointEntry) -> StoreError:
    """What a delete that failed with `exc` answers."""
    if isinstance(exc, StoreError):
        return exc
    if is_storage_failure(exc):
        return storage_error(exc, f"deleting {entry.tinker_path}")
    reason = exc.strerror if isinstance(exc, OSError) else str(exc)
    return StoreError(f"cannot delete {entry.tinker_path}: {reason}")


def _vanished(outcome: Path | StoreError) -> bool:
    return isinstance(outcome, NotFoundError)


def _log_failure(done: Future[None]) -> None:
    """A background purge's unexpected failure (its expected ones are logged by `purge`)."""
    failure = done.exception()
    if failure is not None:
        logger.error("removing a deleted checkpoint's files failed", exc_info=failure)
