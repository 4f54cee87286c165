"""Where things live in a store folder, and the checks that keep every file operation inside it.

STORE/runs/<run_id>/run.json
STORE/runs/<run_id>/{weights,sampler_weights,external_weights}/<name>/...
STORE/.ckpt-tui/meta.sqlite3        per-checkpoint metadata (SQLite, WAL)
STORE/.ckpt-tui/trash/<unique>/     deletes in progress and staged new checkpoints
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ckpt_tui.api_types import SEGMENT_TO_TYPE
from ckpt_tui.store.errors import InvalidRequestError, StoreError
from ckpt_tui.store.names import UnsafeNameError, check_name, check_run_id, split_checkpoint_id
from ckpt_tui.store.settle import look_at

RUNS_DIR = "runs"
META_DIR = ".ckpt-tui"
META_FILE = "meta.sqlite3"
TRASH_DIR = "trash"
RUN_JSON = "run.json"
SEGMENTS: tuple[str, ...] = tuple(SEGMENT_TO_TYPE)

Signature = tuple[int | None, ...]


def checked_run_id(run_id: str) -> str:
    """`run_id` if it is one safe folder name, else InvalidRequestError."""
    try:
        return check_run_id(run_id)
    except UnsafeNameError as exc:
        raise InvalidRequestError(f"invalid training run id: {exc}") from exc


def checked_checkpoint_id(checkpoint_id: str) -> tuple[str, str]:
    """(segment, name) of a safe `SEGMENT/NAME` checkpoint id, else InvalidRequestError."""
    try:
        return split_checkpoint_id(checkpoint_id)
    except UnsafeNameError as exc:
        raise InvalidRequestError(f"invalid checkpoint id: {exc}") from exc


def checked_file_parts(name: str) -> list[str]:
    """The safe components of a file name inside a checkpoint (`a/b.bin` is allowed)."""
    if name.startswith("/"):
        raise InvalidRequestError(f"file name {name!r} is absolute; give a path inside the folder")
    try:
        return [check_name(part, "file name part") for part in name.split("/")]
    except UnsafeNameError as exc:
        raise InvalidRequestError(f"invalid file name {name!r}: {exc}") from exc


class Layout:
    """The paths of one store; `ensure_inside` guards every write and delete."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.runs = root / RUNS_DIR
        self.meta_dir = root / META_DIR
        self.meta_file = self.meta_dir / META_FILE
        self.trash = self.meta_dir / TRASH_DIR

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def checkpoint_dir(self, run_id: str, checkpoint_id: str) -> Path:
        segment, name = checkpoint_id.split("/", 1)
        return self.runs / run_id / segment / name

    def ensure_inside(self, path: Path) -> None:
        """Refuse `path` unless its real parent is inside the store and it is not itself a link.

        Catches `runs/`, a run folder or a segment folder replaced by a symlink.
        """
        parent = path.parent.resolve()
        if parent != self.real_root and self.real_root not in parent.parents:
            raise StoreError(
                f"refusing to touch {path}: it resolves outside the store {self.real_root} "
                "(a folder on the way is a symbolic link); replace the link with a real folder"
            )
        if path.is_symlink():
            raise StoreError(f"refusing to touch {path}: it is a symbolic link, not a folder")


def is_real_dir(path: Path) -> bool:
    """True for a directory that is not a symlink."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def mtime_ns(path: str | Path) -> int | None:
    """The lstat mtime of `path` in ns, None if missing."""
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return None


def run_signature(run_dir: str | Path) -> Signature:
    """The mtimes that change when a checkpoint folder is added or removed in a run."""
    return tuple(mtime_ns(path) for path in signature_paths(run_dir))


def signature_paths(run_dir: str | Path) -> tuple[str, ...]:
    """The folders whose mtimes make `run_signature`, in its order.

    Plain strings, not Path objects: this runs for every run on each check for changes.
    """
    top = os.fspath(run_dir)
    return (top, *(os.path.join(top, segment) for segment in SEGMENTS))


def measure_size(path: str | Path, top: os.stat_result | None = None) -> int:
    """Sum of the sizes of the regular files under `path`; symlinks count 0, never followed.

    `top` is `path`'s lstat when the caller already has it.
    """
    return look_at(os.fspath(path), top).size
