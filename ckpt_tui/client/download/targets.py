"""Where each file of a download goes: a URL key is hostile input until it is one plain path
inside the target folder.

One bad key refuses the whole download, before anything is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

PART_SUFFIX = ".part"
STATE_FILE = ".ckpt-tui-download.json"
MAX_KEY_CHARS = 1024
MAX_DEPTH = 16
MAX_FILES = 10_000
"""The most files one download takes (the server's own limit for a checkpoint)."""


class UnsafeDownload(Exception):
    """The server named a file the download refuses to write (all of it is refused)."""


def target_paths(folder: Path, keys: Iterable[str]) -> dict[str, Path]:
    """key -> where it is written inside `folder`; UnsafeDownload for any key that is absolute,
    holds `..` (or `.`, an empty part, a backslash, a NUL), collides with the download's own
    files, or resolves outside `folder` (a link on the way)."""
    real = folder.resolve()
    found: dict[str, Path] = {}
    for key in keys:
        if len(found) >= MAX_FILES:
            raise UnsafeDownload(
                f"the server named more than {MAX_FILES} files: nothing was downloaded"
            )
        found[key] = _checked(real, key)
    lowered = [str(path).lower() for path in found.values()]
    if len(set(lowered)) != len(lowered):
        raise UnsafeDownload("the server named two files that differ only in letter case")
    return found


def _checked(real: Path, key: str) -> Path:
    def refuse(why: str) -> UnsafeDownload:
        return UnsafeDownload(
            f"the server named a file {key[:200]!r} that {why}: nothing was downloaded"
        )

    if not key or len(key) > MAX_KEY_CHARS:
        raise refuse("is empty or too long")
    if "\\" in key or "\x00" in key or any(ord(ch) < 32 for ch in key):
        raise refuse("holds a backslash or a control character")
    pure = PurePosixPath(key)
    if pure.is_absolute() or key.startswith("/"):
        raise refuse("is an absolute path")
    parts = key.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise refuse("holds '..', '.' or an empty part")
    if len(parts) > MAX_DEPTH:
        raise refuse(f"is more than {MAX_DEPTH} folders deep")
    if parts[-1].endswith(PART_SUFFIX) or parts[0] == STATE_FILE:
        raise refuse("would clash with the download's own working files")
    path = real.joinpath(*parts)
    resolved = Path(os.path.realpath(path))
    if resolved != path or real not in resolved.parents:
        raise refuse("resolves outside the target folder")
    return path


def part_path(target: Path) -> Path:
    """Where a file is written until it is whole."""
    return target.with_name(target.name + PART_SUFFIX)
