"""A folder on disk as a `Storage`: the real folders and regular files, no link followed."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from ckpt_tui import regular_files
from ckpt_tui.store.blobs.base import Entry
from ckpt_tui.store.unread import is_gone, why


class FolderStorage:
    def __init__(self, root: str) -> None:
        self._root = os.fspath(root)

    @property
    def url(self) -> str:
        return self._root

    @property
    def root(self) -> str:
        return self._root

    def list_level(self, path: str) -> dict[str, Entry]:
        found: dict[str, Entry] = {}
        with os.scandir(path) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                    found[entry.name] = _entry(entry.name, st)
        return found

    def stat(self, path: str) -> Entry | None:
        try:
            st = os.lstat(path)
        except OSError as exc:
            if is_gone(exc):
                return None
            raise
        return _entry(os.path.basename(path), st)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        with regular_files.open_regular(path, follow_links=False) as handle:
            handle.seek(start)
            return handle.read(length)

    def delete_batch(self, paths: Sequence[str]) -> dict[str, str | None]:
        outcome: dict[str, str | None] = {}
        for path in paths:
            try:
                os.unlink(path)
                outcome[path] = None
            except OSError as exc:
                outcome[path] = None if is_gone(exc) else why(exc)
        return outcome


def _entry(name: str, st: os.stat_result) -> Entry:
    is_dir = stat.S_ISDIR(st.st_mode)
    size = 0 if is_dir else st.st_size
    return Entry(name, is_dir, size, st.st_mtime_ns, f"{st.st_dev}:{st.st_ino}")
