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

import functools
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

from ckpt_tui.store.discover import accelerate, dcp, deepspeed, hf_trainer, loose, pretrained
from ckpt_tui.store.discover.known import Known, stat_key
from ckpt_tui.store.discover.model import FoundCheckpoint, FoundRun
from ckpt_tui.store.discover.runs import FOUND_SEGMENTS, build_run, checkpoint_name, run_id_for
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
    known: Known = field(default_factory=Known)
    """What the walk found in files' contents, or recalled instead of reading them."""


def discover(
    root: Path,
    reserved: Collection[str] = (),
    max_depth: int = MAX_DEPTH,
    known: Known | None = None,
) -> WalkedRuns:
    """Every run under `root`; `reserved` are ids already taken (the tinker-layout runs);
    `known`: what earlier walks found in files still unchanged (not read again)."""
    result = WalkedRuns(reading=Reading.of(root), known=known or Known())
    stack: list[tuple[str, str, int]] = [(os.fspath(root), "", 0)]
    while stack:
        path, rel, depth = stack.pop()
        result.watch[path] = _mtime(path)
        try:
            listing = list_dir(path)
        except OSError as exc:
            result.reading.failed(path, exc)  # unknown, not empty
            continue
        found, subdirs, extra = examine_listing(
            path, listing, result.reading, depth == 0, result.known
        )
        if found:
            result.runs.append(build_run(run_id_for(rel, reserved), rel, path, found, extra))
        if depth < max_depth:
            for name in sorted(subdirs, reverse=True):
                stack.append((os.path.join(path, name), f"{rel}/{name}".lstrip("/"), depth + 1))
    return result


def examine_run(
    root: Path, rel: str, run_id: str, reading: Reading, known: Known | None = None
) -> FoundRun | None:
    """One run folder again (after it changed); None when it holds no checkpoint any more,
    or could not be read (then `reading.unread` says so)."""
    path = os.path.join(os.fspath(root), rel) if rel else os.fspath(root)
    try:
        listing = list_dir(path)
    except OSError as exc:
        reading.failed(path, exc)
        return None
    found, _, extra = examine_listing(path, listing, reading, not rel, known)
    return build_run(run_id, rel, path, found, extra) if found else None


def watch_changed(watch: dict[str, int | None]) -> bool:
    return any(_mtime(path) != seen for path, seen in watch.items())


def keys_at(rel: str) -> set[tuple[str, str]]:
    """The (run id, checkpoint id) pairs the walk can give a checkpoint it finds at `rel` (a
    path under the store root, `/`-separated); empty where it never finds one (a part it
    skips, deeper than it goes). Its segment depends on what is inside (`segment_of`), and
    its run's id on the Tinker runs beside it (`run_id_for`'s `reserved`): each is allowed."""
    parts = rel.split("/")
    if len(parts) > MAX_DEPTH + 1 or any(_skipped(p, i == 0) for i, p in enumerate(parts)):
        return set()
    folder = "/".join(parts[:-1])
    run_id = run_id_for(folder)
    run_ids = {run_id, run_id_for(folder, reserved={run_id})}
    name = checkpoint_name(parts[-1])
    return {(run, f"{segment}/{name}") for run in run_ids for segment in FOUND_SEGMENTS}


def _skipped(name: str, at_root: bool) -> bool:
    return name.startswith(".") or name in SKIP_ANYWHERE or (at_root and name in SKIP_AT_ROOT)


def _mtime(path: str) -> int | None:
    st = lstat_or_none(path)
    return None if st is None else st.st_mtime_ns


def examine_listing(
    path: str,
    listing: dict[str, str],
    reading: Reading,
    at_root: bool = False,
    known: Known | None = None,
) -> tuple[list[FoundCheckpoint], list[str], list[str]]:
    """(checkpoints among the children, folders to descend into, extra files to watch)."""
    known = known or Known()
    checkpoints: list[FoundCheckpoint] = []
    subdirs: list[str] = []
    extra: list[str] = []
    tag = None
    if any(deepspeed.match(n) for n, kind in listing.items() if kind == DIR):
        latest = os.path.join(path, deepspeed.LATEST)
        key = stat_key("latest", latest) if listing.get(deepspeed.LATEST) == FILE else None
        try:
            tag = known.tag(latest, key, lambda: deepspeed.latest_tag(path, listing))
        except OSError as exc:
            reading.failed(latest, exc)
            tag = deepspeed.UNREAD_TAG  # unknown is no sign of a save in progress
        extra.append(latest)
    for name, kind in sorted(listing.items()):
        child = os.path.join(path, name)
        if kind == FILE:
            if not loose.is_candidate(name):
                continue
            look = _look(child, single_file=True)
            examine = functools.partial(loose.examine, child, name)
            found = known.checkpoint(child, stat_key("loose", child), examine)  # ctime too
        elif _skipped(name, at_root):
            continue
        else:
            found, look, descend = _examine_dir(child, name, tag, reading, known)
            if descend:
                subdirs.append(name)
        if found is not None:
            checkpoints.append(_located(found, child, reading, look))
    return checkpoints, subdirs, extra


def _examine_dir(
    path: str, name: str, tag: str | None, reading: Reading, known: Known
) -> tuple[FoundCheckpoint | None, FilesLook | None, bool]:
    """(the checkpoint this folder is, or None and whether to look inside it; the look at
    its files)."""
    try:
        if reading.device is not None and os.lstat(path).st_dev != reading.device:
            reading.unread[path] = OTHER_DEVICE  # a mount point: reading it may hang or hold
            return None, None, False  # another store's checkpoints, which the trash cannot reach
        listing = list_dir(path)
    except OSError as exc:
        reading.failed(path, exc)
        return None, None, False
    if listing.get(META_DIR) == DIR:
        reading.stores.append(path)  # another store's own: its metadata is not ours to see
        return None, None, False
    kind, examine = _examiner(path, name, listing, tag)
    if examine is None:
        return None, None, True
    look = _look(path, single_file=False)
    return known.checkpoint(path, _key(kind, look), examine), look, False


Examine = Callable[[], FoundCheckpoint | None]


def _examiner(
    path: str, name: str, listing: dict[str, str], tag: str | None
) -> tuple[str, Examine | None]:
    """Which layout the folder is (a name for the key of its finding) and how to read it."""
    if hf_trainer.match(name):
        return "hf_trainer", lambda: hf_trainer.examine(path, name, listing)
    if deepspeed.match(name):
        return f"deepspeed:{tag}", lambda: deepspeed.examine(path, name, listing, tag)
    if accelerate.match(name, listing):
        return "accelerate", lambda: accelerate.examine(path, name, listing)
    if dcp.match(listing):
        return "dcp", lambda: dcp.examine(path, name, listing)
    trainer_output = any(hf_trainer.match(n) for n, kind in listing.items() if kind == DIR)
    if pretrained.is_pretrained(listing) and not trainer_output:
        return "pretrained", lambda: pretrained.examine(path, name, listing)
    return "", None


def _look(path: str, single_file: bool) -> FilesLook | None:
    """One look at a checkpoint's files, with the mtime of the folder or file itself (on a
    bucket, which has no folders, its newest object's); None when it is gone."""
    seen = look_here(path, single_file)
    return None if seen is None else replace(seen[1], top_mtime_ns=seen[0])


def _key(kind: str, look: FilesLook | None) -> str | None:
    """The key of a finding from files as `look` saw them; None if they could not all be
    looked at (then what is read is not kept)."""
    if look is None or look.unread is not None or not look.fingerprint:
        return None
    return f"{kind}:{look.fingerprint}"


def _located(
    found: FoundCheckpoint, path: str, reading: Reading, look: FilesLook | None
) -> FoundCheckpoint:
    """`found` at `path`, with its files as `look` saw them (before it was examined)."""
    found.location = path
    found.mtime_ns = look.top_mtime_ns if look else 0
    found.look = look or FilesLook(0, "", 0, unread="it cannot be read")
    found.size = found.look.size
    unread = found.look.unread or found.unread  # a folder or a file it depends on
    if unread is not None:
        reading.unread[path] = unread
        found.facts.setdefault("unreadable", unread)
    return found
