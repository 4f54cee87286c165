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

A look also keeps the names it listed, with what it saw of each (`FilesLook.listing`): a
folder's mode, mtime, inode and ctime, a file's mode, size, mtime and inode (what the
fingerprint is made of). The next look at the same checkpoint (a warm open looks at 100,000)
stats those names without listing a folder, and compares each stat with the kept one
(`files_unchanged`): equal stats make the fingerprint a walk would make (the listing keeps
the fingerprint it was made with, and is used only for a row holding that one). Safe because
a folder's ctime changes whenever a name is added to it, removed or renamed (POSIX: the
parent's status change time), and `utime` cannot set it back; a file rewritten in place
changes no folder's time but its own stat, which is taken every time. A listing is kept only
when every folder in it last changed `LISTING_AGE_NS` before the look began, so a change in
the same timestamp tick as the one before it (which keeps the ctime) cannot happen after the
listing was read. A listing kept by an older version (names and folder ctimes as text) is
not trusted: the walk runs once and keeps the new one.

On first sight (no fingerprint yet, or one made before fingerprints held inodes) the newest
mtime says since when the files have been as they are, so a folder copied in long ago is
complete at once. A checkpoint the store wrote itself (`Store.add_checkpoint`,
`Store.refresh_checkpoint`) is recorded as settled.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
from dataclasses import dataclass
from typing import Literal

import msgspec

from ckpt_tui.store.meta import Row
from ckpt_tui.store.times import ns_to_us
from ckpt_tui.store.unread import why

SETTLE_SECONDS = 10.0
"""How long a checkpoint's files must stay the same before it counts as complete."""

SETTLED_BY_STORE = 0
"""`Row.files_seen_us` of checkpoints the store wrote itself: settled since the epoch."""

TEMP_SUFFIXES = (".tmp", ".partial", ".part", ".incomplete")
"""Names that say a file or folder is still being written (renamed when done)."""

LISTING_AGE_NS = 2_000_000_000
"""How long before a look every folder in it must have last changed (ctime) for its listing
to be kept: longer than the coarsest timestamp tick of a common file system (FAT's 2 s).
Compared with the real clock, which the file system stamps its times with (not the store's
injectable clock)."""

LISTING_VERSION: Literal[2] = 2
"""Starts a kept listing: older ones (text, before 2) are not trusted (the walk runs)."""

FolderSeen = tuple[int, int, int, int]
"""What a look saw of a folder: its mode, mtime, inode and ctime (the ctime changes when a
name in it is added, removed or renamed)."""

FileSeen = tuple[int, int, int, int]
"""What a look saw of anything else: its mode, size, mtime and inode (the fingerprint's)."""

Listing = tuple[
    Literal[2], str, FolderSeen, list[tuple[bytes, FolderSeen]], list[tuple[bytes, FileSeen]]
]
"""A kept listing: the version, the fingerprint made with it (a row holding another one is
not judged by it), the folder itself, its subfolders and its other entries by their paths
under it (file system bytes). Encoded with msgpack, decoded in one call."""

_LISTING = msgspec.msgpack.Decoder(Listing)
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()

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
    listing: bytes | None = None
    """The names this look listed under a folder, with what it saw of each (`Listing`, see
    the module's docstring); None when they cannot be trusted next time (a folder changed
    just before, or could not be read)."""


@dataclass(frozen=True)
class Settling:
    """The moment of a scan and how long files must stay the same (both in microseconds)."""

    now_us: int
    settle_us: int


def look_at(path: str, top: os.stat_result | None = None) -> FilesLook:
    """Size (regular files, links count 0), fingerprint and newest mtime under `path`, and
    the listing to keep (see the module's docstring)."""
    if top is None:
        try:
            top = os.lstat(path)
        except OSError:
            return FilesLook(0, "", 0)
    if not stat.S_ISDIR(top.st_mode):
        digest = hashlib.blake2b(digest_size=16)
        size = top.st_size if stat.S_ISREG(top.st_mode) else 0
        digest.update(f"{size}:{top.st_mtime_ns}:{top.st_ino}".encode())
        temp = _temp(os.path.basename(path))
        fingerprint = FINGERPRINT_VERSION + digest.hexdigest()
        return FilesLook(size, fingerprint, top.st_mtime_ns, temp, None, top.st_mtime_ns)
    started_ns = time.time_ns()  # before any folder is listed
    walk = _Walk(top)
    stack = [(os.fspath(path), "")]
    while stack:
        folder, rel = stack.pop()
        walk.folder(folder, rel, stack)
    return walk.look(top, walk.kept_listing(top, started_ns - LISTING_AGE_NS))


def files_unchanged(row: Row, parent_fd: int, name: str) -> bool:
    """Whether the files in the folder `name`, in the folder open as `parent_fd`, are the very
    ones `row` measured (its fingerprint), told from its listing without listing a folder:
    every name in it stat'ed as it was. False when it cannot be told so (then a whole look
    tells what changed). File system stores only: a bucket's rows keep no listing.
    (A warm open runs this for every checkpoint: keep it lean. Comparing the stats rather
    than making the fingerprint again took this from 8.2 to 6.0 us a checkpoint, the two
    stats by path 4.9 of them; from the parent folder, the two stats take 0.8 us less.)"""
    if row.files_listing is None:
        return False
    try:
        _, fingerprint, top, folders, files = _LISTING.decode(row.files_listing)
    except msgspec.DecodeError:
        return False  # kept by an older version (or damaged): the walk keeps a new one
    if fingerprint != row.files_fp:
        return False  # not the look that measured the row
    at = os.stat
    try:
        if _folder_seen(at(name, dir_fd=parent_fd, follow_symlinks=False)) != top:
            return False  # a name in it came or went, or the folder was replaced
        base = name.encode(_FS_ENCODING, _FS_ERRORS) + b"/"  # os.fsencode, without its call
        for path, seen in folders:
            if _folder_seen(at(base + path, dir_fd=parent_fd, follow_symlinks=False)) != seen:
                return False
        for path, seen in files:
            st = at(base + path, dir_fd=parent_fd, follow_symlinks=False)
            if (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino) != seen:
                return False  # rewritten, replaced, or now a folder
    except (OSError, ValueError):  # gone, or a damaged name: the walk says why
        return False
    return True


def _folder_seen(st: os.stat_result) -> FolderSeen:
    return (st.st_mode, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


class _Walk:
    """What `look_at` adds up while it walks a folder (in sorted order, so the digest is stable)."""

    __slots__ = (
        "digest", "files", "folders", "newest_ctime_ns", "newest_ns", "size", "temp_name",
        "unread",
    )  # fmt: skip

    def __init__(self, top: os.stat_result) -> None:
        self.digest = hashlib.blake2b(
            f"/:{top.st_mtime_ns}:{top.st_ino}\n".encode(), digest_size=16
        )
        self.size = 0
        self.newest_ns = top.st_mtime_ns
        self.temp_name: str | None = None
        self.unread: str | None = None
        self.folders: list[tuple[bytes, FolderSeen]] = []
        self.files: list[tuple[bytes, FileSeen]] = []
        """What `folder` listed, for `kept_listing`."""
        self.newest_ctime_ns = top.st_ctime_ns

    def folder(self, folder: str, rel: str, stack: list[tuple[str, str]]) -> None:
        """Add one folder's entries."""
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
            if self.add(name, st):
                stack.append((entry.path, name))
                self.folders.append((os.fsencode(name), _folder_seen(st)))
                self.newest_ctime_ns = max(self.newest_ctime_ns, st.st_ctime_ns)
            else:
                seen = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
                self.files.append((os.fsencode(name), seen))

    def add(self, name: str, st: os.stat_result) -> bool:
        """Add one entry; whether it is a folder."""
        if self.temp_name is None and name.endswith(TEMP_SUFFIXES):
            self.temp_name = _temp(name)
        mode, mtime_ns = st.st_mode, st.st_mtime_ns
        if mtime_ns > self.newest_ns:
            self.newest_ns = mtime_ns
        size = st.st_size if stat.S_ISREG(mode) else 0
        self.size += size
        line = f"{name}:{mode:o}:{size}:{mtime_ns}:{st.st_ino}\n"
        self.digest.update(line.encode("utf-8", "surrogateescape"))
        return stat.S_ISDIR(mode)

    def failed(self, name: str, exc: OSError) -> None:
        self.unread = self.unread or f"{name} cannot be read: {why(exc)}"

    def kept_listing(self, top: os.stat_result, changed_before_ns: int) -> bytes | None:
        """The listing to keep (`Listing`): only when every folder was read and none changed
        since `changed_before_ns` (see `LISTING_AGE_NS`)."""
        if self.unread is not None or self.newest_ctime_ns >= changed_before_ns:
            return None
        kept: Listing = (
            LISTING_VERSION,
            self.fingerprint(),
            _folder_seen(top),
            self.folders,
            self.files,
        )
        return msgspec.msgpack.encode(kept)

    def fingerprint(self) -> str:
        return FINGERPRINT_VERSION + self.digest.hexdigest()

    def look(self, top: os.stat_result, listing: bytes | None) -> FilesLook:
        return FilesLook(
            self.size, self.fingerprint(), self.newest_ns, self.temp_name, self.unread,
            top.st_mtime_ns, listing,
        )  # fmt: skip


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
    now = (look.size, look.fingerprint, seen_us, look.listing)
    if (row.size_bytes, row.files_fp, row.files_seen_us, row.files_listing) == now:
        return row
    return msgspec.structs.replace(
        row, size_bytes=look.size, files_fp=look.fingerprint, files_seen_us=seen_us,
        files_listing=look.listing,
    )  # fmt: skip


def incomplete_facts(reason: str | None) -> dict[str, str] | None:
    """The user_metadata facts that flag a checkpoint still being written."""
    return None if reason is None else {"incomplete": "true", "incomplete_reason": reason}
