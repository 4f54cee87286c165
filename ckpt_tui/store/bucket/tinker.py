"""The Tinker layout on a bucket: `runs/<run>/run.json` and
`runs/<run>/{weights,sampler_weights,external_weights}/<name>/…`, read through the walk's
storage (`files.reading_from`); each checkpoint is judged by `scan.tinker_checkpoint`, as in
a folder."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ckpt_tui.store.bucket.tree import join
from ckpt_tui.store.discover.known import Known
from ckpt_tui.store.files import DIR, list_dir, look_here
from ckpt_tui.store.index import RunEntry
from ckpt_tui.store.layout import RUNS_DIR, SEGMENTS
from ckpt_tui.store.meta import Key, Row
from ckpt_tui.store.names import UnsafeNameError, check_name, check_run_id
from ckpt_tui.store.runinfo import read_run_info
from ckpt_tui.store.scan import RunScan, tinker_checkpoint
from ckpt_tui.store.settle import Settling
from ckpt_tui.store.times import ns_to_us


def scan_tinker_runs(
    root: str,
    rows_by_run: dict[str, list[Row]],
    changes: Mapping[str, int],
    settling: Settling,
    known: Known,
) -> tuple[list[RunScan], list[Key]]:
    """(a scan of every run under `root/runs/`, the rows of checkpoints not there any more);
    the runs found are taken out of `rows_by_run`. Reads go to the walk's storage: a listing
    that fails raises (the caller keeps everything it knew). `known`: what was found before
    in checkpoints' files still unchanged (not read again)."""
    runs_dir = join(root, RUNS_DIR)
    scans: list[RunScan] = []
    stale: list[Key] = []
    for run_id, kind in sorted(list_dir(runs_dir).items()):
        if kind != DIR or not _safe(run_id, check_run_id):
            continue
        rows = rows_by_run.pop(run_id, [])
        change = changes.get(run_id, 0)
        scan = _scan_run(join(runs_dir, run_id), run_id, rows, change, settling, known)
        scans.append(scan)
        stale.extend(scan.stale_keys)
    return scans, stale


def _scan_run(
    run_dir: str,
    run_id: str,
    rows: list[Row],
    last_change_us: int,
    settling: Settling,
    known: Known,
) -> RunScan:
    folders = _checkpoint_folders(run_dir)
    seen = {checkpoint: look_here(path, single_file=False) for checkpoint, path in folders.items()}
    newest = max((ns_to_us(look[0]) for look in seen.values() if look), default=0)
    info = read_run_info(Path(run_dir), newest)
    result = RunScan(RunEntry(run_id, Path(run_dir), info, (), last_change_us, watch=()))
    for row in rows:
        path = folders.pop(row.checkpoint_id, None)
        if path is None:
            result.stale_keys.append((run_id, row.checkpoint_id))
        else:
            result.add(*tinker_checkpoint(row, path, settling, result.unread, known))
    for checkpoint_id, path in sorted(folders.items()):
        look = seen[checkpoint_id]
        row = Row(run_id, checkpoint_id, ns_to_us(look[0]) if look else 0)
        result.add(*tinker_checkpoint(row, path, settling, result.unread, known))
    return result


def _checkpoint_folders(run_dir: str) -> dict[str, str]:
    """checkpoint_id -> its folder, for every folder in the run's segment folders."""
    found: dict[str, str] = {}
    present = list_dir(run_dir)
    for segment in SEGMENTS:
        if present.get(segment) != DIR:
            continue
        segment_dir = join(run_dir, segment)
        for name, kind in list_dir(segment_dir).items():
            if kind == DIR and _safe(name, check_name):
                found[f"{segment}/{name}"] = join(segment_dir, name)
    return found


def _safe(name: str, check: Callable[[str], object]) -> bool:
    try:
        check(name)
    except UnsafeNameError:
        return False
    return True
