"""Crash-safe removal of files through `STORE/.ckpt-tui/trash/`.

A delete is four steps (`DELETE_STEPS`), each safe to be interrupted:

1. prepare: make `trash/<unique>/` holding `origin.json` (which checkpoint is going away);
2. move:    rename the checkpoint's folder to `trash/<unique>/files` (atomic, same file system);
3. commit:  drop the metadata row (the store does this, one SQLite transaction);
4. purge:   remove `trash/<unique>` (links are removed as links, never followed).

At open, `recover` finishes whatever is in the trash: a slot whose files were not yet moved has
its origin moved in first (the delete was asked for, so it is completed), then every slot is
removed; the scan that follows drops rows whose folder is gone.
Staged new checkpoints (`trash/<unique>.new`) are removed the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import uuid
from pathlib import Path

from ckpt_tui.store.discover.files import read_json
from ckpt_tui.store.errors import InvalidRequestError, StoreError
from ckpt_tui.store.layout import (
    Layout,
    checked_checkpoint_id,
    checked_file_parts,
    checked_run_id,
)

DELETE_STEPS = ("prepare", "move", "commit", "purge")
ORIGIN = "origin.json"
FILES = "files"


def new_slot(layout: Layout, suffix: str = "") -> Path:
    """A fresh, empty folder in the trash."""
    layout.trash.mkdir(parents=True, exist_ok=True)
    slot = layout.trash / f"{uuid.uuid4().hex}{suffix}"
    slot.mkdir()
    return slot


def prepare(layout: Layout, run_id: str, checkpoint_id: str, location: Path | None = None) -> Path:
    """Step 1: a slot that records which checkpoint it is for, and where its files are."""
    slot = new_slot(layout)
    origin: dict[str, str] = {"run_id": run_id, "checkpoint_id": checkpoint_id}
    if location is not None:
        origin["location"] = os.path.relpath(location, layout.root)
    (slot / ORIGIN).write_text(json.dumps(origin), encoding="utf-8")
    return slot


def move(layout: Layout, path: Path, slot: Path) -> None:
    """Step 2: rename the checkpoint's folder (or file) into the slot.

    Refused for a link, for anything outside the store, and for a folder that holds the
    store's own metadata (the root, or a folder above it).
    """
    layout.ensure_inside(path)
    real = path.resolve()
    if real == layout.real_root or real in layout.meta_dir.resolve().parents:
        raise StoreError(f"refusing to delete {path}: it holds the store itself")
    os.rename(path, slot / FILES)


def purge(path: Path) -> None:
    """Step 4: remove `path` and everything under it without following any link."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)  # uses lstat / fd-relative calls: links inside are unlinked
    else:
        os.unlink(path)


def recover(layout: Layout) -> list[Path]:
    """Finish every interrupted delete and drop staged leftovers; return the slots removed."""
    try:
        slots = sorted(layout.trash.iterdir())
    except FileNotFoundError:
        return []
    for slot in slots:
        _finish_move(layout, slot)
        purge(slot)
    return slots


def _finish_move(layout: Layout, slot: Path) -> None:
    """If `slot` was prepared but its files never moved, move them now."""
    if not slot.is_dir() or slot.is_symlink() or os.path.lexists(slot / FILES):
        return
    try:
        origin = read_json(os.fspath(slot / ORIGIN))
        run_id = checked_run_id(str(origin["run_id"]))
        checkpoint_id = str(origin["checkpoint_id"])
        checked_checkpoint_id(checkpoint_id)
    except (OSError, ValueError, KeyError, TypeError, InvalidRequestError):
        return  # no readable intent (e.g. a crash while writing origin.json): nothing to finish
    path = _origin_path(layout, origin, run_id, checkpoint_id)
    if path is not None and os.path.lexists(path):
        try:
            move(layout, path, slot)
        except (OSError, StoreError):
            return  # leave the checkpoint as it is rather than touch anything doubtful


def _origin_path(
    layout: Layout, origin: dict[str, object], run_id: str, checkpoint_id: str
) -> Path | None:
    """Where the files were: `location` (relative to the root) when recorded and safe."""
    location = origin.get("location")
    if location is None:
        return layout.checkpoint_dir(run_id, checkpoint_id)
    try:
        parts = checked_file_parts(str(location))
    except InvalidRequestError:
        return None
    return layout.root.joinpath(*parts)
