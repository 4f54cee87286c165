"""Re-reading training logs for the browse screen (the snapshot itself: ckpt_tui.loader)."""

from __future__ import annotations

from pathlib import Path

from ckpt_tui.loader import Snapshot
from ckpt_tui.logdirs import METRICS_FILE_NAME, Metrics, read_metrics


def refresh_log_dirs(snapshot: Snapshot) -> bool:
    """Re-read the log dirs whose checkpoints.jsonl changed; True if any did (blocking I/O)."""
    changed = [log_dir.refresh() for log_dir in snapshot.discovery.log_dirs]
    if any(changed):
        snapshot.rebuild()
    return any(changed)


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
