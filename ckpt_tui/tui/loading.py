"""Re-reading training logs for the browse screen (the snapshot itself: ckpt_tui.loader)."""

from __future__ import annotations

from ckpt_tui.loader import Snapshot


def refresh_log_dirs(snapshot: Snapshot) -> bool:
    """Re-read the log dirs whose checkpoints.jsonl changed; True if any did (blocking I/O)."""
    changed = [log_dir.refresh() for log_dir in snapshot.discovery.log_dirs]
    if any(changed):
        snapshot.rebuild()
    return any(changed)
