"""A real small file system for full-disk tests, and faults injected into the os calls that
change files.

    with small_tmpfs(tmp_path / "disk") as disk:   # a 2 MiB tmpfs (we are root in CI)
        ...; filler = fill(disk); ...; filler.unlink()

`small_tmpfs` skips the test, printing why, where mounting is refused (not root, no `mount`).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest

FILL_CHUNK = 64 * 1024


@contextmanager
def small_tmpfs(where: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted on `where` for the block; unmounted after it."""
    where.mkdir(parents=True, exist_ok=True)
    mount = shutil.which("mount")
    if mount is None:
        _skip("there is no `mount` command")
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", os.fspath(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        _skip(f"mounting a tmpfs was refused: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        # lazily: a test that failed may still hold a file open there
        subprocess.run(["umount", "--lazy", os.fspath(where)], check=True)


def _skip(reason: str) -> NoReturn:
    message = f"no real small file system for a full-disk test: {reason}"
    print(message)
    pytest.skip(message)


def fill(disk: Path, name: str = "filler") -> Path:
    """Write into `disk` until not one more byte fits; return the file that holds the space."""
    filler = disk / name
    with filler.open("ab", buffering=0) as out:
        for size in (FILL_CHUNK, 4096, 512, 1):
            try:
                while out.write(b"\0" * size):
                    pass
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    return filler


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class FailingOs:
    """Makes the `at`-th call (counting from 1) to an os function that changes files raise
    OSError(`code`): mkdir, rename, replace, unlink, rmdir, fdopen for writing, and open
    with a flag that writes. `calls` counts them all, so a test can go on until `at` passes
    the last call of a change."""

    NAMES = ("mkdir", "rename", "replace", "unlink", "rmdir", "fdopen", "open")

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at: int, code: int) -> None:
        self.at = at
        self.code = code
        self.calls = 0
        self.failed: str | None = None
        for name in self.NAMES:
            monkeypatch.setattr(os, name, self._wrap(name, getattr(os, name)))

    def _wrap(self, name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._changes_files(name, args, kwargs):
                self.calls += 1
                if self.calls == self.at:
                    self.failed = f"{name}{args[:1]!r}"
                    raise OSError(self.code, os.strerror(self.code))
            return real(*args, **kwargs)

        return call

    @staticmethod
    def _changes_files(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if name == "open":
            flags = args[1] if len(args) > 1 else kwargs.get("flags", 0)
            return bool(flags & WRITE_FLAGS)
        if name == "fdopen":
            mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
            return any(c in mode for c in "wax+")
        return True
