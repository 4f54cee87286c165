"""Reading the folders: which runs and checkpoints exist, reconciled with the metadata rows.

A folder with no row gets one (created = the folder's mtime, size measured); a row with no
folder is dropped. Sizes of known checkpoints come from their rows
(the cache): a file added to an existing checkpoint by hand shows up after
`Store.refresh_checkpoint`. Symlinked run or checkpoint folders and unsafe names are skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from ckpt_tui.names import UnsafeNameError, check_name, check_run_id
from ckpt_tui.store.discover import FoundRun
from ckpt_tui.store.index import CheckpointEntry, RunEntry
from ckpt_tui.store.layout import SEGMENTS, Layout, is_real_dir, measure_size, run_signature
from ckpt_tui.store.meta import Key, Row
from ckpt_tui.store.runinfo import read_run_info
from ckpt_tui.store.times import ns_to_us


@dataclass
class RunScan:
    """One run as found on disk, and the row changes that bring SQLite in line."""

    run: RunEntry
    entries: list[CheckpointEntry] = field(default_factory=list)
    new_rows: list[Row] = field(default_factory=list)
    stale_keys: list[Key] = field(default_factory=list)


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


def list_checkpoint_folders(run_dir: Path) -> dict[str, str]:
    """checkpoint_id -> folder for every real folder under the run's segment folders."""
    found: dict[str, str] = {}
    for segment in SEGMENTS:
        segment_dir = run_dir / segment
        if not is_real_dir(segment_dir):
            continue
        with os.scandir(segment_dir) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False) and _safe(e.name, False):
                    found[f"{segment}/{e.name}"] = e.path
    return found


def scan_run(
    layout: Layout, run_id: str, rows: list[Row], last_change_us: int = 0
) -> RunScan | None:
    """Read one run folder; None if it is gone (or no longer a real folder)."""
    run_dir = layout.run_dir(run_id)
    signature = run_signature(run_dir)  # before listing, so a change during it is seen later
    if signature[0] is None or not is_real_dir(run_dir):
        return None
    info = read_run_info(run_dir, ns_to_us(signature[0]))
    result = RunScan(RunEntry(run_id, run_dir, info, signature, last_change_us))
    folders = list_checkpoint_folders(run_dir)
    for row in rows:
        path = folders.pop(row.checkpoint_id, None)
        if path is None:
            result.stale_keys.append((run_id, row.checkpoint_id))
        else:
            result.entries.append(CheckpointEntry(row, path))
    for checkpoint_id, path in folders.items():
        row = new_row(run_id, checkpoint_id, path)
        result.new_rows.append(row)
        result.entries.append(CheckpointEntry(row, path))
    return result


def new_row(run_id: str, checkpoint_id: str, path: str) -> Row:
    """The row of a folder found without one: created = its mtime, size measured."""
    try:
        top = os.lstat(path)
    except OSError:
        return Row(run_id, checkpoint_id, 0, size_bytes=0)
    return Row(run_id, checkpoint_id, ns_to_us(top.st_mtime_ns), size_bytes=measure_size(path, top))


def scan_found(found: FoundRun, rows: list[Row], last_change_us: int = 0) -> RunScan:
    """A discovered run reconciled with its rows; sizes are re-measured at every discovery."""
    run = RunEntry(
        found.run_id, Path(found.path), found.info, found.signature, last_change_us,
        rel=found.rel, watch=found.watch,
    )  # fmt: skip
    result = RunScan(run)
    by_id = {checkpoint_id: (c, facts) for checkpoint_id, c, facts in found.checkpoints}
    for row in rows:
        item = by_id.pop(row.checkpoint_id, None)
        if item is None:
            result.stale_keys.append((found.run_id, row.checkpoint_id))
            continue
        checkpoint, facts = item
        if row.size_bytes != checkpoint.size:
            row = replace(row, size_bytes=checkpoint.size)
            result.new_rows.append(row)
        result.entries.append(CheckpointEntry(row, checkpoint.location, facts))
    for checkpoint_id, (checkpoint, facts) in by_id.items():
        created = ns_to_us(checkpoint.mtime_ns)
        row = Row(found.run_id, checkpoint_id, created, size_bytes=checkpoint.size)
        result.new_rows.append(row)
        result.entries.append(CheckpointEntry(row, checkpoint.location, facts))
    return result
