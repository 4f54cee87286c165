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

A look also keeps the names it listed, with each folder's ctime (`FilesLook.listing`). The
next look at the same checkpoint (a warm open looks at 100,000) stats those names without
listing a folder, and finds the same fingerprint a walk would (`files_unchanged`). This is
safe because a folder's ctime changes whenever a name is added to it, removed or renamed
(POSIX: the parent's status change time), and `utime` cannot set it back; a file rewritten
in place changes no folder's time but its own stat, which is taken every time (its size,
mtime and inode are in the fingerprint). A listing is kept only when every folder in it last
changed `LISTING_AGE_NS` before the look began, so a change in the same timestamp tick as
the one before it (which keeps the ctime) cannot happen after the listing was read.

On first sight (no fingerprint yet, or one made before fingerprints held inodes) the newest
mtime says since when the files have been as they are, so a folder copied in long ago is
complete at once. A checkpoint the store wrote itself (`Store.add_checkpoint`,
`Store.refresh_checkpoint`) is recorded as settled.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
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

LISTING_AGE_NS = 2_000_000_000
"""How long before a look every folder in it must have last changed (ctime) for its listing
to be kept: longer than the coarsest timestamp tick of a common file system (FAT's 2 s).
Compared with the real clock, which the file system stamps its times with (not the store's
injectable clock)."""

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
    """The names this look listed under a folder, with each folder's ctime (see the module's
    docstring); None when they cannot be trusted next time (a folder changed just before,
    or could not be read)."""


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


def files_unchanged(path: str, row: Row) -> bool:
    """Whether the files in the folder `path` are the very ones `row` measured (its
    fingerprint), told from its listing without listing a folder; False when it cannot be
    told so (then a whole look tells what changed). File system stores only: a bucket's
    rows keep no listing."""
    if row.files_listing is None:
        return False
    try:
        top = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(top.st_mode):
        return False
    walk = _walk_again(path, top, row.files_listing)
    return walk is not None and walk.fingerprint() == row.files_fp


def _walk_again(path: str, top: os.stat_result, listing: bytes) -> _Walk | None:
    """The walk of `path` from the names `listing` kept: each is stat'ed (a file rewritten
    in place shows in its own stat), no folder is listed. None when a folder's ctime changed
    (a name may have come or gone) or a name cannot be looked at: then the folder is walked.
    (A warm open runs this for every checkpoint: keep it lean.)"""
    folder_ctime, *tokens = listing.decode("utf-8", "surrogateescape").split("\0")
    if folder_ctime != str(top.st_ctime_ns):
        return None
    walk = _Walk(top)
    for token in tokens:
        ctime: str | None = None
        if token[0] == "f":
            name = token[1:]
        else:
            ctime, name = token[1:].split("/", 1)
        try:
            st = os.lstat(f"{path}/{name}")
        except OSError:
            return None  # the walk says why
        if walk.add(name, st) != (ctime is not None):
            return None  # a file became a folder or the other way round
        if ctime is not None and ctime != str(st.st_ctime_ns):
            return None
    return walk


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


class _Walk:
    """What `look_at` adds up while it walks a folder (in sorted order, so the digest is stable)."""

    __slots__ = ("digest", "names", "newest_ctime_ns", "newest_ns", "size", "temp_name", "unread")

    def __init__(self, top: os.stat_result) -> None:
        self.digest = hashlib.blake2b(
            f"/:{top.st_mtime_ns}:{top.st_ino}\n".encode(), digest_size=16
        )
        self.size = 0
        self.newest_ns = top.st_mtime_ns
        self.temp_name: str | None = None
        self.unread: str | None = None
        self.names: list[str] = []
        """What `folder` listed: `f<name>` or `d<ctime>/<name>` (see `kept_listing`)."""
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
                self.names.append(f"d{st.st_ctime_ns}/{name}")
                self.newest_ctime_ns = max(self.newest_ctime_ns, st.st_ctime_ns)
            else:
                self.names.append("f" + name)

    def add(self, name: str, st: os.stat_result) -> bool:
        """Add one entry (a warm open runs this for every file: keep it lean); whether it is a
        folder."""
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
        """The listing to keep, the folder's ctime first: only when every folder was read and
        none changed since `changed_before_ns` (see `LISTING_AGE_NS`)."""
        if self.unread is not None or self.newest_ctime_ns >= changed_before_ns:
            return None
        tokens = [str(top.st_ctime_ns), *self.names]
        return "\0".join(tokens).encode("utf-8", "surrogateescape")

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
    return replace(
        row, size_bytes=look.size, files_fp=look.fingerprint, files_seen_us=seen_us,
        files_listing=look.listing,
    )  # fmt: skip


def incomplete_facts(reason: str | None) -> dict[str, str] | None:
    """The user_metadata facts that flag a checkpoint still being written."""
    return None if reason is None else {"incomplete": "true", "incomplete_reason": reason}
