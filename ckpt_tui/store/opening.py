"""Checks and set-up when a store is opened: the root folder, writability, the metadata file."""

from __future__ import annotations

import os
from pathlib import Path

from ckpt_tui.store import trash
from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.layout import META_DIR, Layout
from ckpt_tui.store.meta import MetaDB
from ckpt_tui.store.storage import is_storage_failure, storage_error


def prepare_root(root: Path, create: bool, readonly: bool | None) -> bool:
    """Check (or create) the root folder; return whether the store is read-only."""
    if root.exists():
        if not root.is_dir():
            raise StoreError(
                f"{root} exists but is not a folder: give the path of a store folder "
                "(or of a folder to create)"
            )
    elif create and readonly is not True:
        try:
            root.mkdir(parents=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {root}: {exc.strerror}") from exc
    else:
        raise StoreError(f"no store at {root}: the folder does not exist (create it first)")
    if readonly is None:
        return not _writable(root)
    return readonly


def _writable(root: Path) -> bool:
    """Whether the root and its `.ckpt-tui` folder (if there is one yet) can be written (a root
    user always can). Creates nothing: looking at a folder never writes into it."""
    if not os.access(root, os.W_OK | os.X_OK):
        return False
    meta_dir = root / META_DIR
    if not meta_dir.exists():
        return True
    return os.access(meta_dir, os.W_OK | os.X_OK)


def open_meta(layout: Layout, readonly: bool, lazy: bool = False) -> tuple[MetaDB, bool]:
    """The metadata and whether its folders are still to be made (`make_folders`).

    Read-only: an in-memory copy. Lazy, on a folder with no metadata file yet: an empty
    in-memory one, so browsing writes nothing; the first change makes it (`persist`).
    Otherwise: make the folders, finish interrupted deletes, open the file.
    """
    for path in (layout.runs, layout.meta_dir, layout.trash):
        if path.is_symlink():
            raise StoreError(
                f"{path} is a symbolic link; a store keeps everything inside its own folder: "
                "replace the link with a real folder"
            )
    if readonly:
        return MetaDB.open_readonly(layout.meta_file), False
    if lazy and not layout.meta_file.exists():
        return MetaDB.open_readonly(layout.meta_file), True
    make_folders(layout)
    trash.recover(layout)
    return MetaDB.open_writable(layout.meta_file), False


def make_folders(layout: Layout) -> None:
    """`runs/` and `.ckpt-tui/trash/`, the folders every change needs."""
    try:
        layout.runs.mkdir(exist_ok=True)
        layout.trash.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if is_storage_failure(exc):
            raise storage_error(exc, f"preparing the store folder {layout.root}") from exc
        raise StoreError(f"cannot prepare the store folder {layout.root}: {exc}") from exc
