"""What discovery learned from files' contents, kept so that reading them again is skipped
while they are unchanged (a warm open reads no checkpoint's files).

Discovery reads headers (`trainer_state.json`, pickles opcode by opcode, safetensors
headers, DCP `.metadata`, DeepSpeed `latest`) to tell what a checkpoint is. What it found is
kept per path with a key made of how it was examined and the fingerprint of the files it
looked at (`settle.look_at`: names, sizes, mtimes, inodes and modes, metadata only): the same
key later means the same files, so the same finding. A finding that depends on a file that
could not be read is not kept (it is read again until it can be). The store keeps these
findings in its metadata (`MetaDB.found`), loaded at open and written as they are learned.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from ckpt_tui.store.discover.model import FoundCheckpoint
from ckpt_tui.store.files import lstat_or_none, on_storage, stored_stamp

Finding = tuple[str, bytes]
"""(the key it was found under, what was found as JSON: a checkpoint, null for none, a
DeepSpeed tag, a run's run.json)."""

T = TypeVar("T")


@dataclass
class Known:
    """The findings known before a walk, and those it made or used (read without the lock:
    the store writes them back under it)."""

    before: Mapping[str, Finding] = field(default_factory=dict)
    used: dict[str, Finding] = field(default_factory=dict)
    """Every finding the walk relied on, by path (what a whole walk keeps)."""
    learned: dict[str, Finding] = field(default_factory=dict)
    """The findings it had to read files for (new or changed)."""

    def checkpoint(
        self, path: str, key: str | None, examine: Callable[[], FoundCheckpoint | None]
    ) -> FoundCheckpoint | None:
        """The checkpoint at `path` as found under `key` before, else `examine()` (which
        reads files; None: not a checkpoint), kept unless it could not read a file."""
        name = os.path.basename(path)
        return self.recall(
            path,
            key,
            examine,
            FoundCheckpoint | None,
            _read_whole,
            fits=lambda found: found is None or found.name == name,
        )

    def carry(self, path: str, key: str | None) -> None:
        """Keep what was found at `path` under `key` before, unused this time (the caller
        knew the answer another way), as a whole walk keeps what it used."""
        kept = self._kept(path, key)
        if kept is not None:
            self.used[path] = kept

    def _kept(self, path: str, key: str | None) -> Finding | None:
        """What was found at `path` before, if it was found under `key`."""
        kept = self.before.get(path)
        return kept if key is not None and kept is not None and kept[0] == key else None

    def tag(self, path: str, key: str | None, read: Callable[[], str | None]) -> str | None:
        """DeepSpeed's `latest` tag, as `recall` (an OSError from `read` is raised)."""
        return self.recall(path, key, read, str | None)

    def recall(
        self,
        path: str,
        key: str | None,
        read: Callable[[], T],
        kind: Any,
        keep: Callable[[T], bool] = lambda _: True,
        fits: Callable[[T], bool] = lambda _: True,
    ) -> T:
        """What was read at `path` under `key` before (`kind`: its type, to decode it; `fits`:
        whether it can be this path's), else `read()` and remember what it gave when `keep`
        says it is whole. No key (the files could not be looked at): always read, never
        kept. A finding that does not decode or fit (kept by another version, damaged) is
        read again."""
        if key is None or not _utf8(path):  # a name that is not UTF-8 is read every time
            return read()
        kept = self._kept(path, key)
        if kept is not None:
            try:
                recalled: T = msgspec.json.decode(kept[1], type=kind)
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass
            else:
                if fits(recalled):
                    self.used[path] = kept
                    return recalled
        value = read()
        if keep(value):
            try:
                finding = (key, msgspec.json.encode(value))
            except (UnicodeEncodeError, msgspec.EncodeError):
                return value  # e.g. a file name inside it that is not UTF-8
            self.used[path] = self.learned[path] = finding
        return value


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_whole(found: FoundCheckpoint | None) -> bool:
    return found is None or (found.unread is None and "unreadable" not in found.facts)


def stat_key(kind: str, path: str) -> str | None:
    """A key for one file's contents: its size, mtime, ctime and inode (on a bucket: its
    size, ETag and time); None if it cannot be looked at."""
    if on_storage():
        stamp = stored_stamp(path)
        return None if stamp is None else f"{kind}:{stamp}"
    st = lstat_or_none(path)
    if st is None:
        return None
    return f"{kind}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
