"""Checks and set-up when a store is opened: the root folder, writability, the metadata file."""

from __future__ import annotations

import hashlib
import os
import socket
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
    derived_id = derived_store_id(layout.root)
    if readonly:
        return MetaDB.open_readonly(layout.meta_file, derived_id), False
    if lazy and not layout.meta_file.exists():
        return MetaDB.open_readonly(layout.meta_file, derived_id), True
    make_folders(layout)
    trash.recover(layout)
    return MetaDB.open_writable(layout.meta_file, derived_id), False


MACHINE_ID_FILES = ("/etc/machine-id", "/proc/sys/kernel/random/boot_id")


def derived_store_id(root: Path) -> str:
    """The id of the folder `root` as it is, found without writing anything: this machine,
    and the device and inode of the folder. Every opening of one folder on one machine
    derives the same id (a read-only `serve` and a writable `--local`), and the first write
    keeps it in the metadata (`MetaDB.ensure_store_id`), so it never changes under a reader."""
    try:
        info = root.stat()
        place = f"{info.st_dev}\0{info.st_ino}"
    except OSError:  # gone since it was checked: its path, so opening still says why
        place = os.path.realpath(root)
    text = f"{machine_id()}\0{place}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def machine_id() -> str:
    """This machine's id: /etc/machine-id, else this boot's id, else the host name."""
    for path in MACHINE_ID_FILES:
        try:
            with open(path, "rb") as file:
                found = file.read(256).decode("ascii", "replace").strip()
        except OSError:
            continue
        if found:
            return found
    return socket.gethostname()


def make_folders(layout: Layout) -> None:
    """`runs/` and `.ckpt-tui/trash/`, the folders every change needs."""
    try:
        layout.runs.mkdir(exist_ok=True)
        layout.trash.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if is_storage_failure(exc):
            raise storage_error(exc, f"preparing the store folder {layout.root}") from exc
        raise StoreError(f"cannot prepare the store folder {layout.root}: {exc}") from exc
