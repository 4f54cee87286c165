"""Careful file access for the store and discovery: regular files only, bounded reads, no links
followed.

Discovery looks at folders a training job may still be writing, so nothing here blocks (a FIFO
named `model.pt` is refused, not opened for a blocking read) or reads more than it must.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO

from ckpt_tui import regular_files
from ckpt_tui.bounded_json import MAX_JSON_BYTES, parse_json_object
from ckpt_tui.store.settle import TEMP_SUFFIXES

MAX_SMALL_FILE = 64 * 1024 * 1024
"""The most discovery reads of any one file (a pickle, a trainer_state.json, an index)."""

DIR, FILE = "dir", "file"


def open_regular(path: str) -> BinaryIO:
    """Open a regular file for reading without following a final link or blocking on a FIFO."""
    return regular_files.open_regular(path, follow_links=False)


def read_capped(path: str, cap: int = MAX_SMALL_FILE) -> bytes:
    """The whole of a regular file of at most `cap` bytes; OSError or ValueError otherwise."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > cap:
            raise ValueError(f"{os.path.basename(path)} is {size} bytes, over the {cap} byte limit")
        return handle.read(cap + 1)[:cap]


def read_json(path: str) -> dict[str, Any]:
    """A JSON object from a file, bounded (`bounded_json`); OSError or ValueError otherwise."""
    return parse_json_object(read_capped(path, MAX_JSON_BYTES), os.path.basename(path))


def list_dir(path: str) -> dict[str, str]:
    """name -> "dir" or "file" for the real folders and regular files in `path` (no links)."""
    found: dict[str, str] = {}
    with os.scandir(path) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    found[entry.name] = DIR
                elif entry.is_file(follow_symlinks=False):
                    found[entry.name] = FILE
            except OSError:
                continue
    return found


def strip_temp(name: str) -> tuple[str, bool]:
    """(`name` without a temporary-write suffix, whether it had one)."""
    for suffix in TEMP_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], True
    return name, False


def temp_files(listing: dict[str, str]) -> list[str]:
    """The names in a listing that say a write is still going on."""
    return sorted(name for name in listing if strip_temp(name)[1])


def lstat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
