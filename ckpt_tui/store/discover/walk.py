"""The walk: find every checkpoint folder or file under a store root, grouped by folder.

Depth is bounded (`MAX_DEPTH`), links are never followed (so no loops), `runs/` (the tinker
layout, read elsewhere) and `.ckpt-tui/` at the root are skipped, as are hidden folders,
`__pycache__` and `node_modules`. A folder recognized as a checkpoint is not descended into.
A folder that cannot be read, or lies on another file system, is remembered as unread
(`WalkedRuns.unread`): what it holds is unknown, not absent. A folder holding a store of its own
(`.ckpt-tui/`) is never walked into: it is another backend (`WalkedRuns.stores`).
Every folder listed is remembered with its mtime (`WalkedRuns.watch`): when one changes, a
folder was added or removed somewhere, and the walk runs again.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ckpt_tui.store.discover import accelerate, dcp, deepspeed, hf_trainer, loose, pretrained
from ckpt_tui.store.discover.model import FoundCheckpoint, FoundRun
from ckpt_tui.store.discover.runs import build_run, run_id_for
from ckpt_tui.store.files import DIR, FILE, list_dir, look_here, lstat_or_none, on_storage
from ckpt_tui.store.layout import META_DIR, RUNS_DIR
from ckpt_tui.store.settle import FilesLook
from ckpt_tui.store.unread import OTHER_DEVICE, Unread, why

MAX_DEPTH = 6
SKIP_AT_ROOT = frozenset({RUNS_DIR, META_DIR})
SKIP_ANYWHERE = frozenset({"__pycache__", "node_modules"})


@dataclass
class Reading:
    """What a walk met besides checkpoints: folders it could not read, stores it left alone."""

    device: int | None = None
    """The store root's file system: a folder on another one is not walked into."""
    unread: Unread = field(default_factory=dict)
    stores: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, root: Path) -> Reading:
        """A reading of the store at `root` (a link given as the root is followed: it is
        the store the user named); a bucket has one device."""
        if on_storage():
            return cls()
        try:
            return cls(os.stat(root).st_dev)
        except OSError:
            return cls()

    def failed(self, path: str, exc: OSError) -> None:
        self.unread[path] = f"cannot be read: {why(exc)}"


@dataclass
class WalkedRuns:
    runs: list[FoundRun] = field(default_factory=list)
    watch: dict[str, int | None] = field(default_factory=dict)
    reading: Reading = field(default_factory=Reading)


def discover(root: Path, reserved: Collection[str] = (), max_depth: int = MAX_DEPTH) -> WalkedRuns:
    """Every run under `root`; `reserved` are ids already taken (the tinker-layout runs)."""
    result = WalkedRuns(reading=Reading.of(root))
    stack: list[tuple[str, str, int]] = [(os.fspath(root), "", 0)]
    while stack:
        path, rel, depth = stack.pop()
        result.watch[path] = _mtime(path)
        try:
            listing = list_dir(path)
        except OSError as exc:
            result.reading.failed(path, exc)  # unknown, not empty
            continue
        found, subdirs, extra = examine_listing(path, listing, result.reading, depth == 0)
        if found:
            result.runs.append(build_run(run_id_for(rel, reserved), rel, path, found, extra))
        if depth < max_depth:
            for name in sorted(subdirs, reverse=True):
                stack.append((os.path.join(path, name), f"{rel}/{name}".lstrip("/"), depth + 1))
    return result


def examine_run(root: Path, rel: str, run_id: str, reading: Reading) -> FoundRun | None:
    """One run folder again (after it changed); None when it holds no checkpoint any more,
    or could not be read (then `reading.unread` says so)."""
    path = os.path.join(os.fspath(root), rel) if rel else os.fspath(root)
    try:
        listing = list_dir(path)
    except OSError as exc:
        reading.failed(path, exc)
        return None
    found, _, extra = examine_listing(path, listing, reading, not rel)
    return build_run(run_id, rel, path, found, extra) if found else None


def watch_changed(watch: dict[str, int | None]) -> bool:
    return any(_mtime(path) != seen for path, seen in watch.items())


def _skipped(name: str, at_root: bool) -> bool:
    return name.startswith(".") or name in SKIP_ANYWHERE or (at_root and name in SKIP_AT_ROOT)


def _mtime(path: str) -> int | None:
    st = lstat_or_none(path)
    return None if st is None else st.st_mtime_ns


def examine_listing(
    path: str, listing: dict[str, str], reading: Reading, at_root: bool = False
) -> tuple[list[FoundCheckpoint], list[str], list[str]]:
    """(checkpoints among the children, folders to descend into, extra files to watch)."""
    checkpoints: list[FoundCheckpoint] = []
    subdirs: list[str] = []
    extra: list[str] = []
    tag = None
    if any(deepspeed.match(n) for n, kind in listing.items() if kind == DIR):
        try:
            tag = deepspeed.latest_tag(path, listing)
        except OSError as exc:
            reading.failed(os.path.join(path, deepspeed.LATEST), exc)
            tag = deepspeed.UNREAD_TAG  # unknown is no sign of a save in progress
        extra.append(os.path.join(path, deepspeed.LATEST))
    for name, kind in sorted(listing.items()):
        child = os.path.join(path, name)
        if kind == FILE:
            found = loose.examine(child, name) if loose.is_candidate(name) else None
        elif _skipped(name, at_root):
            continue
        else:
            found, descend = _examine_dir(child, name, tag, reading)
            if descend:
                subdirs.append(name)
        if found is not None:
            checkpoints.append(_located(found, child, reading))
    return checkpoints, subdirs, extra


def _examine_dir(
    path: str, name: str, tag: str | None, reading: Reading
) -> tuple[FoundCheckpoint | None, bool]:
    """(the checkpoint this folder is, or None and whether to look inside it)."""
    try:
        if reading.device is not None and os.lstat(path).st_dev != reading.device:
            reading.unread[path] = OTHER_DEVICE  # a mount point: reading it may hang or hold
            return None, False  # another store's checkpoints, which the trash cannot reach
        listing = list_dir(path)
    except OSError as exc:
        reading.failed(path, exc)
        return None, False
    if listing.get(META_DIR) == DIR:
        reading.stores.append(path)  # another store's own: its metadata is not ours to see
        return None, False
    if hf_trainer.match(name):
        return hf_trainer.examine(path, name, listing), False
    if deepspeed.match(name):
        return deepspeed.examine(path, name, listing, tag), False
    if accelerate.match(name, listing):
        return accelerate.examine(path, name, listing), False
    if dcp.match(listing):
        return dcp.examine(path, name, listing), False
    trainer_output = any(hf_trainer.match(n) for n, kind in listing.items() if kind == DIR)
    if pretrained.is_pretrained(listing) and not trainer_output:
        return pretrained.examine(path, name, listing), False
    return None, True


def _located(found: FoundCheckpoint, path: str, reading: Reading) -> FoundCheckpoint:
    found.location = path
    seen = look_here(path, found.single_file)
    found.mtime_ns = seen[0] if seen else 0
    found.look = seen[1] if seen else FilesLook(0, "", 0, unread="it cannot be read")
    found.size = found.look.size
    unread = found.look.unread or found.unread  # a folder or a file it depends on
    if unread is not None:
        reading.unread[path] = unread
        found.facts.setdefault("unreadable", unread)
    return found
