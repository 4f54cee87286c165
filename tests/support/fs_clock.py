"""Waiting for the file system's clock to move on, so that a change made next gets a newer
ctime than every folder has now (file systems stamp times in coarse ticks: ext4 by the
kernel's tick of a few milliseconds). A store keeps a look's listing of a checkpoint folder
only when the folder's ctime is older than the look (`settle.LISTING_AGE_NS`, which these
tests set to 0): waiting first makes that certain, and makes any later change show."""

from __future__ import annotations

import os
import time
from pathlib import Path

WAIT = 20.0
"""Seconds to wait at most (the clock moves in milliseconds)."""


def wait_past_changes_under(root: Path, scratch: Path) -> None:
    """Return once the file system's clock is past the newest ctime under `root`, as seen
    on `scratch` (a file outside `root`, on the same file system, stamped again and again)."""
    newest = max(os.lstat(path).st_ctime_ns for path in (root, *root.rglob("*")))
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        scratch.touch()
        os.utime(scratch)
        if os.lstat(scratch).st_ctime_ns > newest:
            return
    raise AssertionError("the file system's clock did not move on")
