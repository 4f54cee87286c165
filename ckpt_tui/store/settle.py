"""Whether a checkpoint's files have stopped changing, and the size they add up to.

A trainer writes a checkpoint over seconds: files appear one by one and grow. The store looks
at a checkpoint's files (`look_at`: the name, size, mtime and inode of each and of the folder,
without following links: metadata only, no file's contents) and keeps a fingerprint of that
look in the checkpoint's metadata row, with the time it first saw those exact files. The
inodes make a folder or file replaced under the same name a change even when its sizes and
mtimes were copied along (`cp -a`, `rsync -a`). A checkpoint is complete only when nothing
says it is still being written (a temporary name, a safetensors file shorter than its header
says, a layout's own signs) and the same files have been there for `settle` seconds. The
cached size is the size of the fingerprinted files: when the files change, so do the
fingerprint and the size. A store opened again trusts what its rows say of files whose
fingerprint is unchanged: it opens none of them (`scan.py`).

On first sight (no fingerprint yet, or one made before fingerprints held inodes) the newest
mtime says since when the files have been as they are, so a folder copied in long ago is
complete at once. A checkpoint the store wrote itself (`Store.add_checkpoint`,
`Store.refresh_checkpoint`) is recorded as settled.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, replace

from ckpt_tui.store.meta import Row
from ckpt_tui.store.times import ns_to_us
from ckpt_tui.store.unread import why

SETTLE_SECONDS = 10.0
"""How long a checkpoint's files must stay the same before it counts as complete."""

SETTLED_BY_STORE = 0
"""`Row.files_seen_us` of checkpoints the store wrote itself: settled since the epoch."""

TEMP_SUFFIXES = (".tmp", ".partial", ".part", ".incomplete")
"""Names that say a file or folder is still being written (renamed when done)."""

FINGERPRINT_VERSION = "i:"
"""Starts the fingerprints that include inodes: a row holding an older one (made before they
did) is judged as on first sight, by its files' mtimes, rather than as a change."""


@dataclass(frozen=True)
class FilesLook:
    """One look at a checkpoint's files (a folder or a single file)."""

    size: int
    fingerprint: str
    newest_ns: int
    temp_name: str | None = None
    unread: str | None = None
    """The first folder or file inside that could not be read, and why: the size and the
    fingerprint may miss files (a failed read is a problem, never an absence)."""
    top_mtime_ns: int = 0
    """The mtime of the folder (or file) itself."""


@dataclass(frozen=True)
class Settling:
    """The moment of a scan and how long files must stay the same (both in microseconds)."""

    now_us: int
    settle_us: int


def look_at(path: str, top: os.stat_result | None = None) -> FilesLook:
    """Size (regular files, links count 0), fingerprint and newest mtime under `path`."""
    if top is None:
        try:
            top = os.lstat(path)
        except OSError:
            return FilesLook(0, "", 0)
    digest = hashlib.blake2b(digest_size=16)
    if not stat.S_ISDIR(top.st_mode):
        size = top.st_size if stat.S_ISREG(top.st_mode) else 0
        digest.update(f"{size}:{top.st_mtime_ns}:{top.st_ino}".encode())
        temp = _temp(os.path.basename(path))
        return FilesLook(size, _fingerprint(digest), top.st_mtime_ns, temp, None, top.st_mtime_ns)
    walk = _Walk(digest, top)
    stack = [(os.fspath(path), "")]
    while stack:
        folder, rel = stack.pop()
        walk.folder(folder, rel, stack)
    fingerprint = _fingerprint(digest)
    return FilesLook(
        walk.size, fingerprint, walk.newest_ns, walk.temp_name, walk.unread, top.st_mtime_ns
    )


def _fingerprint(digest: hashlib.blake2b) -> str:
    return FINGERPRINT_VERSION + digest.hexdigest()


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


class _Walk:
    """What `look_at` adds up while it walks a folder (in sorted order, so the digest is stable)."""

    def __init__(self, digest: hashlib.blake2b, top: os.stat_result) -> None:
        self.digest = digest
        self.size = 0
        self.newest_ns = top.st_mtime_ns
        self.temp_name: str | None = None
        self.unread: str | None = None
        digest.update(f"/:{top.st_mtime_ns}:{top.st_ino}\n".encode())

    def folder(self, folder: str, rel: str, stack: list[tuple[str, str]]) -> None:
        """Add one folder's entries (a warm open runs this for every checkpoint: keep it lean)."""
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=_entry_name)
        except OSError as exc:
            self.failed(rel or "the folder", exc)  # count what can be read, say what could not
            return
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                self.failed(f"{rel}/{entry.name}" if rel else entry.name, exc)
                continue
            name = f"{rel}/{entry.name}" if rel else entry.name
            if self.temp_name is None and name.endswith(TEMP_SUFFIXES):
                self.temp_name = _temp(name)
            if st.st_mtime_ns > self.newest_ns:
                self.newest_ns = st.st_mtime_ns
            mode = st.st_mode
            size = st.st_size if stat.S_ISREG(mode) else 0
            self.size += size
            line = f"{name}:{mode:o}:{size}:{st.st_mtime_ns}:{st.st_ino}\n"
            self.digest.update(line.encode("utf-8", "surrogateescape"))
            if stat.S_ISDIR(mode):
                stack.append((entry.path, name))

    def failed(self, name: str, exc: OSError) -> None:
        self.unread = self.unread or f"{name} cannot be read: {why(exc)}"


def _temp(name: str) -> str | None:
    base = name.rsplit("/", 1)[-1]
    if any(base.endswith(s) and len(base) > len(s) for s in TEMP_SUFFIXES):
        return name
    return None


def first_seen_us(look: FilesLook, row: Row | None, settling: Settling) -> int:
    """Since when these exact files have been there, as far as the store can tell."""
    if row is not None and row.files_fp == look.fingerprint and row.files_seen_us is not None:
        return row.files_seen_us
    if row is None or row.files_fp is None or not row.files_fp.startswith(FINGERPRINT_VERSION):
        return min(settling.now_us, ns_to_us(look.newest_ns))  # first sight: the files say
    return settling.now_us  # changed since the last look


def unsettled_reason(seen_us: int, settling: Settling) -> str | None:
    """Why files seen unchanged since `seen_us` do not count as complete yet, or None."""
    if settling.now_us - seen_us >= settling.settle_us:
        return None
    seconds = settling.settle_us / 1_000_000
    return f"files changed less than {seconds:g} s ago: still being written"


def with_look(row: Row, look: FilesLook, seen_us: int | None) -> Row:
    """`row` measuring `look`: its size and fingerprint, first seen at `seen_us` (None when
    the files showed a sign of a save in progress: they are judged again next time)."""
    if (row.size_bytes, row.files_fp, row.files_seen_us) == (look.size, look.fingerprint, seen_us):
        return row
    return replace(row, size_bytes=look.size, files_fp=look.fingerprint, files_seen_us=seen_us)


def incomplete_facts(reason: str | None) -> dict[str, str] | None:
    """The user_metadata facts that flag a checkpoint still being written."""
    return None if reason is None else {"incomplete": "true", "incomplete_reason": reason}
