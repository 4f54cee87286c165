"""Re-reading only the training logs into a new snapshot (a whole load: catalog/snapshot.py)."""

from __future__ import annotations

from pathlib import Path

from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.training.logdirs import (
    METRICS_FILE_NAME,
    LogDir,
    LogDirDiscovery,
    Metrics,
    read_metrics,
)


def refresh_log_dirs(snapshot: Snapshot, cache: RowCache) -> Snapshot | None:
    """A new snapshot with the log dirs whose checkpoints.jsonl changed read again; None if
    none changed (blocking I/O). `snapshot` and its log dirs stay as they were."""
    log_dirs = snapshot.discovery.log_dirs
    fresh = [LogDir(old.path, old.display_name) if old.has_changed() else old for old in log_dirs]
    if all(new is old for new, old in zip(fresh, log_dirs, strict=True)):
        return None
    discovery = LogDirDiscovery(fresh, snapshot.discovery.problems)
    return Snapshot.join(
        snapshot.runs,
        snapshot.checkpoints,
        discovery,
        snapshot.weights_info,
        cache,
        snapshot.incomplete,
    )


def refresh_metrics(cache: dict[str, Metrics]) -> bool:
    """Read what was appended to each metrics.jsonl read so far; True if any grew (blocking).

    Each grown file gets a new Metrics (the one on screen is never changed under it).
    """
    grown = False
    for folder, metrics in list(cache.items()):
        path = Path(folder) / METRICS_FILE_NAME
        if not metrics.is_current(path):
            cache[folder] = read_metrics(path, metrics)
            grown = True
    return grown
