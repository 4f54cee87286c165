"""Reading the folders: which runs and checkpoints exist, reconciled with the metadata rows.

A folder with no row gets one (created = the folder's mtime, size measured); a row with no
folder is dropped, but only when the folder that would hold it was read whole: a row whose
folder could not be read is kept, listed with the reason (`unreadable`) and never swept.
Sizes of known checkpoints come from their rows (the cache): a file added to an existing
checkpoint by hand shows up after `Store.refresh_checkpoint`. Symlinked run or checkpoint
folders and unsafe names are skipped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ckpt_tui.store.discover import FoundCheckpoint, FoundRun, Known
from ckpt_tui.store.discover.known import stat_key
from ckpt_tui.store.discover.runs import mark_flags
from ckpt_tui.store.discover.weights import folder_weights
from ckpt_tui.store.files import list_dir, look_here
from ckpt_tui.store.index import CheckpointEntry, RunEntry
from ckpt_tui.store.layout import (
    RUN_JSON,
    SEGMENTS,
    Layout,
    is_real_dir,
    mtime_ns,
    run_signature,
)
from ckpt_tui.store.meta import Key, Row
from ckpt_tui.store.names import UnsafeNameError, check_name, check_run_id
from ckpt_tui.store.runinfo import RunInfo, read_run_info
from ckpt_tui.store.settle import (
    FilesLook,
    Settling,
    files_unchanged,
    first_seen_us,
    incomplete_facts,
    unsettled_reason,
    with_look,
)
from ckpt_tui.store.times import ns_to_us
from ckpt_tui.store.unread import OTHER_DEVICE, Unread, hidden_by, why


@dataclass
class RunScan:
    """One run as found on disk, and the row changes that bring SQLite in line."""

    run: RunEntry
    entries: list[CheckpointEntry] = field(default_factory=list)
    new_rows: list[Row] = field(default_factory=list)
    stale_keys: list[Key] = field(default_factory=list)
    unread: Unread = field(default_factory=dict)
    """What in the run could not be read (path -> why): the scan is not whole."""

    def keep(self, row: Row, location: str, reason: str, facts: Mapping[str, str] | None) -> None:
        """A checkpoint whose folder could not be read: its row stays as it is (nothing says it
        is gone), listed with the reason, never swept (it counts as incomplete)."""
        kept = {**(facts or {}), "unreadable": reason}
        kept.update(incomplete="true", incomplete_reason=f"cannot be read: {reason}")
        self.entries.append(CheckpointEntry(row, location, kept))

    def add(self, row: Row, entry: CheckpointEntry, changed: bool) -> None:
        """One checkpoint found, and its row if it must be written."""
        self.entries.append(entry)
        if changed:
            self.new_rows.append(row)


def _safe(name: str, is_run: bool) -> bool:
    try:
        check_run_id(name) if is_run else check_name(name)
    except UnsafeNameError:
        return False
    return True


def list_run_ids(layout: Layout) -> list[str]:
    """Names of the real (non-symlink) run folders under runs/."""
    if not is_real_dir(layout.runs):
        return []
    with os.scandir(layout.runs) as entries:
        return [e.name for e in entries if e.is_dir(follow_symlinks=False) and _safe(e.name, True)]


@dataclass
class CheckpointFolders:
    """A run's checkpoint folders (`list_checkpoint_folders`), by checkpoint id: (the folder's
    path, the descriptor of its segment folder, its name there). The segment folders stay
    open until the `with` ends: a warm open stats each checkpoint's names from its segment
    folder (`settle.files_unchanged`), resolving one or two names instead of the whole path
    from `/` (the two stats of a checkpoint: 5.6 -> 4.8 us), and never through a segment
    folder swapped for a link once it is open."""

    found: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    descriptors: list[int] = field(default_factory=list)

    def __enter__(self) -> CheckpointFolders:
        return self

    def __exit__(self, *exc_info: object) -> None:
        while self.descriptors:
            os.close(self.descriptors.pop())


_SEGMENT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def list_checkpoint_folders(run_dir: Path, unread: Unread) -> CheckpointFolders:
    """Every real folder under the run's segment folders; a segment folder that cannot be
    read goes into `unread` (a missing one holds nothing). Close it (`with`)."""
    folders = CheckpointFolders()
    try:
        present = set(os.listdir(run_dir))
    except OSError as exc:
        unread[os.fspath(run_dir)] = f"cannot be read: {why(exc)}"
        return folders
    for segment in (segment for segment in SEGMENTS if segment in present):
        segment_dir = os.path.join(run_dir, segment)
        try:
            if not stat.S_ISDIR(os.lstat(segment_dir).st_mode):
                continue  # a file or a link: no checkpoint of this store
            with os.scandir(segment_dir) as entries:
                names = [
                    e.name
                    for e in entries
                    if e.is_dir(follow_symlinks=False) and _safe(e.name, False)
                ]
            descriptor = os.open(segment_dir, _SEGMENT_FLAGS)  # a link now: cannot be read
        except FileNotFoundError:
            continue
        except OSError as exc:
            unread[segment_dir] = f"cannot be read: {why(exc)}"
            continue
        folders.descriptors.append(descriptor)
        for name in names:
            folders.found[f"{segment}/{name}"] = (f"{segment_dir}/{name}", descriptor, name)
    return folders


def scan_run(
    layout: Layout,
    run_id: str,
    rows: list[Row],
    settling: Settling,
    last_change_us: int = 0,
    known: Known | None = None,
) -> RunScan | None:
    """Read one run folder; None if it is gone (or no longer a real folder). `known`: what
    was read before from files still unchanged (run.json), not read again."""
    run_dir = layout.run_dir(run_id)
    signature = run_signature(run_dir)  # before listing, so a change during it is seen later
    if signature[0] is None or not is_real_dir(run_dir):
        return None
    created_us = ns_to_us(signature[0])
    run_json = os.path.join(run_dir, RUN_JSON)
    info = (known or Known()).recall(
        run_json,
        stat_key("run.json", run_json),
        lambda: read_run_info(run_dir, created_us),
        RunInfo,
        lambda info: not info.corrupted,
    )
    result = RunScan(RunEntry(run_id, run_dir, info, signature, last_change_us))
    if _same_device(layout.root, run_dir):
        folders = list_checkpoint_folders(run_dir, result.unread)
    else:  # a mount point: not this store's to read or delete (the trash cannot reach it)
        folders, result.unread[os.fspath(run_dir)] = CheckpointFolders(), OTHER_DEVICE
    with folders:
        _scan_rows(layout, run_id, rows, folders.found, settling, result)
    return result


def _scan_rows(
    layout: Layout,
    run_id: str,
    rows: list[Row],
    found: dict[str, tuple[str, int, str]],
    settling: Settling,
    result: RunScan,
) -> None:
    """Match a run's rows with the checkpoint folders `found` (see `CheckpointFolders`)."""
    entries = result.entries
    for row in rows:
        folder = found.pop(row.checkpoint_id, None)
        if folder is not None:  # the common case, kept free of Path objects (100,000 at open)
            path, segment_fd, name = folder
            seen_us = row.files_seen_us
            if seen_us is not None and files_unchanged(row, segment_fd, name):
                # the files the row measured, as in the whole look when the fingerprint is the
                # same: the row stands, and only the time since they were first seen can change
                reason = unsettled_reason(seen_us, settling)
                entries.append(CheckpointEntry(row, path, incomplete_facts(reason)))
            else:
                result.add(*tinker_checkpoint(row, path, settling, result.unread))
            continue
        location = layout.checkpoint_dir(run_id, row.checkpoint_id)
        reason = hidden_by(result.unread, os.fspath(location.parent))
        if reason is not None:
            result.keep(row, os.fspath(location), reason, None)
        else:
            result.stale_keys.append((run_id, row.checkpoint_id))
    for checkpoint_id, (path, _, _) in found.items():
        row = new_row(run_id, checkpoint_id, path)
        result.add(*tinker_checkpoint(row, path, settling, result.unread))


def _same_device(root: Path, folder: Path) -> bool:
    try:
        return os.stat(root).st_dev == os.lstat(folder).st_dev
    except OSError:
        return True  # the listing that follows says why it cannot be read


def new_row(run_id: str, checkpoint_id: str, path: str) -> Row:
    """The row of a folder found without one: created = its mtime, nothing measured yet."""
    top = mtime_ns(path)
    return Row(run_id, checkpoint_id, 0 if top is None else ns_to_us(top))


def tinker_checkpoint(
    row: Row, path: str, settling: Settling, unread: Unread, known: Known | None = None
) -> tuple[Row, CheckpointEntry, bool]:
    """(the row measuring the folder's files as they are now, the entry, whether it changed);
    files that cannot be read go into `unread` (a bucket's too: see `files.reading_from`).
    A whole look: `scan_run` tells first, from the row's listing, whether it is needed.
    `known` (a bucket's, whose rows are not kept between processes): what was found before
    in these same files, not read again."""
    seen = look_here(path, single_file=False)
    look = seen[1] if seen else FilesLook(0, "", 0)
    if look.unread is not None:
        unread[path] = look.unread
        facts = incomplete_facts(f"cannot be read: {look.unread}") or {}
        return row, CheckpointEntry(row, path, {**facts, "unreadable": look.unread}), False
    known_whole = row.files_fp == look.fingerprint and row.files_seen_us is not None
    if known_whole:
        problem, file_unread = None, None
        if known is not None:  # kept with the rest, for the next process
            known.carry(path, _tinker_key(look))
    elif known is not None:
        problem, file_unread = _recall_still_written(path, look, known)
    else:
        problem, file_unread = _still_written(path, look)
    if file_unread is not None:  # a weight file that cannot be read: a problem, not a save
        unread[path] = file_unread
        return row, CheckpointEntry(row, path, {"unreadable": file_unread}), False
    if problem is None:
        seen_us = first_seen_us(look, row, settling)
        reason = unsettled_reason(seen_us, settling)
        measured = with_look(row, look, seen_us)
    else:
        reason, measured = problem, with_look(row, look, None)
    entry = CheckpointEntry(measured, path, incomplete_facts(reason))
    return measured, entry, measured is not row


def _recall_still_written(
    path: str, look: FilesLook, known: Known
) -> tuple[str | None, str | None]:
    """`_still_written`, or what it answered before for files with the same fingerprint
    (kept only when every weight file could be read)."""
    answer: tuple[str | None, str | None] = known.recall(
        path,
        _tinker_key(look),
        lambda: _still_written(path, look),
        tuple[str | None, str | None],
        lambda answer: answer[1] is None,
    )
    return answer


def _tinker_key(look: FilesLook) -> str | None:
    return f"tinker:{look.fingerprint}" if look.fingerprint else None


def _still_written(path: str, look: FilesLook) -> tuple[str | None, str | None]:
    """(a sign in a tinker-layout folder that its save is not done: a temporary name, or a
    safetensors file (or shard named by an index) that is shorter than its header says;
    the first weight file that could not be read, and why)."""
    if look.temp_name is not None:
        return f"{look.temp_name} is still being written (temporary name)", None
    try:
        listing = list_dir(path)
    except OSError as exc:
        return f"the folder cannot be read: {exc.strerror or exc}", None
    weights = folder_weights(path, listing)
    return weights.truncated, weights.unread


def scan_found(
    found: FoundRun,
    rows: list[Row],
    settling: Settling,
    last_change_us: int = 0,
    unread: Mapping[str, str] | None = None,
    before: Mapping[str, CheckpointEntry] | None = None,
) -> RunScan:
    """A discovered run reconciled with its rows; sizes are re-measured at every discovery.

    A row not found is dropped only if the walk (`unread`: what it could not read) read the
    run's folder whole; else it is kept, at its location `before` when known."""
    run = RunEntry(
        found.run_id, Path(found.path), found.info, found.signature, last_change_us,
        rel=found.rel, watch=found.watch,
    )  # fmt: skip
    result = RunScan(run)
    by_id = {row.checkpoint_id: row for row in rows}
    measured: list[tuple[FoundCheckpoint, Row, bool]] = []
    for checkpoint_id, checkpoint, _ in found.checkpoints:
        old = by_id.pop(checkpoint_id, None)
        row = old or Row(found.run_id, checkpoint_id, ns_to_us(checkpoint.mtime_ns))
        new = _settle_found(checkpoint, row, old, settling)
        measured.append((checkpoint, new, new is not old))
    reason = hidden_by(unread or {}, found.path)
    if reason is None:
        result.stale_keys.extend((found.run_id, checkpoint_id) for checkpoint_id in by_id)
    else:
        keep_rows(result, list(by_id.values()), found.path, reason, before)
    facts = mark_flags([checkpoint for checkpoint, _, _ in measured])  # after settling
    for checkpoint, row, changed in measured:
        result.add(row, CheckpointEntry(row, checkpoint.location, facts[checkpoint.name]), changed)
    return result


def keep_rows(
    result: RunScan,
    rows: list[Row],
    folder: str,
    reason: str,
    before: Mapping[str, CheckpointEntry] | None,
) -> None:
    """Keep `rows` of a run whose folder could not be read whole, where they were before
    (or by name in `folder`), with what was known of them."""
    for row in rows:
        old = (before or {}).get(row.checkpoint_id)
        name = row.checkpoint_id.split("/", 1)[-1]
        location = old.location if old else os.path.join(folder, name)
        result.keep(row, location, reason, old.facts if old else None)


def _settle_found(
    checkpoint: FoundCheckpoint, row: Row, old: Row | None, settling: Settling
) -> Row:
    """`row` measuring the checkpoint's files; an unsettled one is marked incomplete."""
    look = checkpoint.look
    if checkpoint.incomplete is not None:
        return with_look(row, look, None)
    seen_us = first_seen_us(look, old, settling)
    checkpoint.incomplete = unsettled_reason(seen_us, settling)
    return with_look(row, look, seen_us)
