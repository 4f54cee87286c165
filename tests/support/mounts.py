"""A small tmpfs mounted for a test (we are root in CI); skipped, with the reason, where
mounting is refused."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TIMEOUT = 60.0


@contextmanager
def tmpfs_on(folder: Path, size: str = "1m") -> Iterator[Path]:
    """`folder` with a fresh tmpfs of `size` mounted on it until the block ends."""
    argv = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
    except FileNotFoundError:
        pytest.skip("no mount command: cannot mount a tmpfs")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True, timeout=TIMEOUT)
