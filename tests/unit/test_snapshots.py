"""Snapshots are immutable: a change in the training logs makes a new one sharing unchanged rows."""

from __future__ import annotations

import gc
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgspec
import pytest

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog.log_refresh import refresh_log_dirs
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.training.logdirs import discover_log_dirs

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def record(run: str, step: int) -> str:
    path = f"tinker://{run}/weights/{step:06d}"
    return json.dumps({"name": f"{step:06d}", "batch": step, "state_path": path}) + "\n"


def checkpoint(run: str, step: int) -> Checkpoint:
    return Checkpoint(
        f"weights/{step:06d}",
        "training",
        NOW + timedelta(minutes=step),
        f"tinker://{run}/weights/{step:06d}",
        size_bytes=1000,
    )


def write_logs(root: Path) -> None:
    for run in ("run-a", "run-b"):
        (root / run).mkdir(parents=True)
        (root / run / "checkpoints.jsonl").write_text(record(run, 1) + record(run, 2))


def first_snapshot(root: Path, cache: RowCache) -> Snapshot:
    runs = [TrainingRun(run, "Qwen/Qwen3-8B", "me", True, NOW, lora_rank=8) for run in "ab"]
    checkpoints = [checkpoint(f"run-{r}", step) for r in "ab" for step in (1, 2)]
    return Snapshot.join(runs, checkpoints, discover_log_dirs([root], None), None, cache)


def test_a_grown_log_makes_a_new_snapshot_and_leaves_the_old_one_alone(tmp_path: Path) -> None:
    write_logs(tmp_path)
    cache = RowCache()
    old = first_snapshot(tmp_path, cache)
    old_rows = list(old.catalog.rows)
    old_records = [d.records_file.records for d in old.discovery.log_dirs if d.records_file]
    assert refresh_log_dirs(old, cache) is None  # nothing changed: no new snapshot

    with (tmp_path / "run-a" / "checkpoints.jsonl").open("a") as log:
        log.write(record("run-a", 3))  # a checkpoint the server does not have (yet)
    new = refresh_log_dirs(old, cache)

    assert new is not None and new is not old
    assert old.catalog.rows == old_rows  # the same row objects, none added
    assert [d.records_file.records for d in old.discovery.log_dirs if d.records_file] == (
        old_records
    )
    # run-a's rows are new (they name the re-read log's records); run-b's are shared
    rebuilt = [row.tinker_path for row in new.catalog.rows if row not in old_rows]
    assert rebuilt == [f"tinker://run-a/weights/00000{step}" for step in (1, 2, 3)]
    assert new.catalog.row_by_path["tinker://run-a/weights/000003"].is_missing  # not stored yet
    run_b = [row for row in new.catalog.rows if row.run_id == "run-b"]
    assert len(run_b) == 2 and run_b == [row for row in old_rows if row.run_id == "run-b"]


def test_snapshots_catalogs_and_rows_cannot_be_changed(tmp_path: Path) -> None:
    write_logs(tmp_path)
    snapshot = first_snapshot(tmp_path, RowCache())
    row = snapshot.catalog.rows[0]
    for target, name in (
        (snapshot, "catalog"),
        (snapshot.catalog, "rows"),
        (snapshot.catalog.runs[0], "rows"),
        (row, "final"),
        (row.server, "public"),
    ):
        with pytest.raises(AttributeError):
            setattr(target, name, None)
    assert msgspec.structs.replace(row, final=True).final and not row.final


def test_a_snapshots_per_row_objects_are_not_tracked_by_the_collector(tmp_path: Path) -> None:
    """At 100,000 rows every tracked per-row object is walked by each full collection."""
    write_logs(tmp_path)
    snapshot = first_snapshot(tmp_path, RowCache())
    gc.collect()  # untracks what the collector can (exact tuples, dicts of untracked values)
    per_row = [
        (name, value)
        for row in snapshot.catalog.rows
        for name, value in (("row", row), ("server", row.server), ("size", row.size))
    ]
    assert [name for name, value in per_row if gc.is_tracked(value)] == []


def test_a_refreshed_page_keeps_the_held_copy_of_each_unchanged_checkpoint(
    tmp_path: Path,
) -> None:
    write_logs(tmp_path)
    cache = RowCache()
    held = first_snapshot(tmp_path, cache).checkpoints
    copies = [msgspec.json.decode(msgspec.json.encode(c), type=Checkpoint) for c in held]
    changed = msgspec.structs.replace(copies[0], public=True)
    swapped = cache.known([changed, *copies[1:]])
    assert swapped[0] is changed  # a change keeps the new copy
    assert all(new is old for new, old in zip(swapped[1:], held[1:], strict=True))
