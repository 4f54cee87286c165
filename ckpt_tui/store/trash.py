"""Crash-safe removal of files through `STORE/.ckpt-tui/trash/`.

Deletes are done in batches (one, or the many a bulk delete asks for at once), four steps
each (`DELETE_STEPS`), each safe to be interrupted:

1. prepare: take an empty slot `trash/<unique>/` per checkpoint and write one intent record
            `trash/<unique>.intent` for the batch (which checkpoint goes into which slot);
2. move:    rename each checkpoint's folder to its slot's `files` (atomic, same file system);
            once all are moved, the intent is removed;
3. commit:  drop the metadata rows (the store does this, one SQLite transaction per batch);
4. purge:   empty each slot (links are removed as links, never followed) and keep it for a
            later delete (`SpareSlots`); done without the store's lock.

A step that fails (a full disk, an I/O error) undoes the steps before it (`restore` moves the
files back when the commit fails), so a delete that reports an error has not happened; one
whose purge fails has happened (the slot is removed at the next open). The intent is gone
before any delete of the batch answers, so a delete that failed (its files left in place) is
never finished by a later `recover`.

At open, `recover` finishes whatever is in the trash: each intent's checkpoints whose files
were not yet moved are moved in first (the deletes were asked for, so they are completed),
then the intent and every slot are removed; the scan that follows drops rows whose folder is
gone. A slot holding an `origin.json` (one slot's intent, written by versions before batch
intents) is finished the same way. Staged new checkpoints (`trash/<unique>.new`) are removed.

Every path is resolved once: its folders are opened one by one from the store root down
without following links (`O_NOFOLLOW`), and the rename, the checks and the removal act on those
descriptors (`dir_fd=`). A folder swapped for a symbolic link half-way through makes the
delete fail; it never redirects it outside the store.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from ckpt_tui.store.errors import InvalidRequestError, StoreError
from ckpt_tui.store.files import read_json
from ckpt_tui.store.layout import (
    META_DIR,
    TRASH_DIR,
    Layout,
    checked_checkpoint_id,
    checked_file_parts,
    checked_run_id,
)

DELETE_STEPS = ("prepare", "move", "commit", "purge")
ORIGIN = "origin.json"
"""One slot's intent (versions before batch intents); still finished by `recover`."""
INTENT = ".intent"
"""The suffix of a batch's intent record in `trash/`."""
FILES = "files"


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR)
"""What opening a symbolic link (or a file) as a folder with O_NOFOLLOW fails with."""


def new_slot(layout: Layout, suffix: str = "", trash_fd: int | None = None) -> Path:
    """A fresh, empty folder in the trash (made in `trash_fd` when given: see `_trash_dir`)."""
    with _trash_dir(layout, trash_fd) as trash:
        name = f"{uuid.uuid4().hex}{suffix}"
        os.mkdir(name, dir_fd=trash)
    return layout.trash / name


class SpareSlots:
    """Emptied slots kept for the next deletes instead of being removed.

    Making and removing a folder in `trash/` each take the trash folder's own lock in the
    kernel, and removing one waits for the file system's journal while holding it (~2 ms on
    ext4 here): a delete making its slot waited behind the purges of the deletes before it.
    A spare slot is an empty folder (`recover` removes any left at the next open); `close`
    removes them, and a slot handed back after that is removed at once."""

    def __init__(self, layout: Layout, limit: int = 64) -> None:
        self._layout = layout
        self._limit = limit
        self._free: list[Path] = []
        self._lock = threading.Lock()
        self._closed = False
        self._trash_fd: int | None = None

    def trash_fd(self) -> int | None:
        """A descriptor of `trash/`, opened once (from the root down, no link followed) and
        kept until `close`, so a slot is opened with one call rather than one per folder
        from the root (a delete opens its slot three times). None once closed."""
        with self._lock:
            if self._trash_fd is None and not self._closed:
                with opened_dir(self._layout, [], create=[META_DIR, TRASH_DIR]) as trash:
                    self._trash_fd = os.dup(trash)
            return self._trash_fd

    def take(self) -> Path | None:
        with self._lock:
            return self._free.pop() if self._free else None

    def give_back(self, slot: Path) -> None:
        """Keep an emptied slot (see `empty`), or remove it when enough are kept."""
        with self._lock:
            if not self._closed and len(self._free) < self._limit:
                self._free.append(slot)
                return
        purge(self._layout, slot)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            spare, self._free = self._free, []
            if self._trash_fd is not None:
                os.close(self._trash_fd)
                self._trash_fd = None
        for slot in spare:
            with suppress(OSError, StoreError):
                purge(self._layout, slot)


def write_intent(
    layout: Layout, deletes: Sequence[tuple[Path, str, str, Path]], trash_fd: int | None = None
) -> Path:
    """Step 1: record, in one file, which checkpoint (slot, run id, checkpoint id, location)
    goes into which slot of `trash/`; returns its path for `drop_intent`."""
    records = [
        {
            "slot": slot.name,
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "location": "/".join(parts_inside(layout, location)),  # relative to the root
        }
        for slot, run_id, checkpoint_id, location in deletes
    ]
    name = f"{uuid.uuid4().hex}{INTENT}"
    data = json.dumps({"deletes": records}).encode("ascii")
    with _trash_dir(layout, trash_fd) as trash:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(name, flags, 0o644, dir_fd=trash)
        try:  # no file object: written under the store's lock
            with memoryview(data) as left:
                written = 0
                while written < len(data):
                    written += os.write(out, left[written:])
        except BaseException:
            os.close(out)
            with suppress(OSError):
                os.unlink(name, dir_fd=trash)  # a half-written intent must not be acted on
            raise
        os.close(out)
    return layout.trash / name


def drop_intent(layout: Layout, intent: Path, trash_fd: int | None = None) -> None:
    """End of step 2: the batch's files are moved (or stayed, for the deletes that failed)."""
    with _trash_dir(layout, trash_fd) as trash:
        os.unlink(intent.name, dir_fd=trash)


@contextmanager
def _trash_dir(layout: Layout, trash_fd: int | None) -> Iterator[int]:
    """`trash_fd` (`SpareSlots.trash_fd`), or `trash/` opened from the root down."""
    if trash_fd is not None:
        yield trash_fd
        return
    with opened_dir(layout, [], create=[META_DIR, TRASH_DIR]) as trash:
        yield trash


def move(
    layout: Layout,
    path: Path,
    slot: Path,
    trash_fd: int | None = None,
    folders: BatchFolders | None = None,
) -> None:
    """Step 2: rename the checkpoint's folder (or file) into the slot.

    Refused for a link, for anything outside the store, for the root and for the store's own
    metadata folder. The rename acts on descriptors of both parent folders, so a folder on the
    way swapped for a link meanwhile cannot redirect it. With `folders`, the parent folder is
    the batch's descriptor of it (`BatchFolders`).
    """
    parts = parts_inside(layout, path)
    if parts[0] == META_DIR:
        raise StoreError(f"refusing to delete {path}: it holds the store itself")
    name = parts[-1]
    with (
        _parent_dir(layout, parts[:-1], folders) as parent,
        _slot_dir(layout, slot, trash_fd) as into,
    ):
        if _is_link(name, parent):
            raise StoreError(f"refusing to touch {path}: it is a symbolic link, not a folder")
        os.rename(name, FILES, src_dir_fd=parent, dst_dir_fd=into)
        if folders is not None:
            folders.moved_away(parts)
        if _is_link(FILES, into):  # swapped for a link after the check: that link was moved
            raise StoreError(
                f"refusing to delete {path}: it was replaced by a symbolic link while being "
                "deleted; nothing it points to was touched"
            )


class BatchFolders:
    """The folders a batch of deletes moves checkpoints out of, each opened once for the batch
    (from the root down, one name at a time, no link followed, as `opened_dir` does; a folder
    shares the descriptors of the folders above it) instead of once per delete: that was 8 of
    a delete's ~40 system calls in `serve` (a run's checkpoints share their parent folder).
    A folder is resolved once per batch, under the store's lock; one moved away by a delete
    of the batch (`moved_away`) is forgotten with everything below it, so a later delete of
    the batch resolves its path again, as it would alone. `close` closes them all."""

    def __init__(self, layout: Layout) -> None:
        self._layout = layout
        self._open: dict[tuple[str, ...], int] = {}

    def descriptor(self, parts: Sequence[str]) -> int:
        """The folder `parts` below the root (the root itself for no parts), opened once."""
        key = tuple(parts)
        fd = self._open.get(key)
        if fd is not None:
            return fd
        if not key:
            fd = os.open(self._layout.real_root, DIR_FLAGS)
        else:
            above = self.descriptor(key[:-1])
            fd = _open_child(above, key[-1], self._layout.root.joinpath(*key[:-1]))
        self._open[key] = fd
        return fd

    def moved_away(self, parts: Sequence[str]) -> None:
        """Forget `parts` and every folder opened below it (their paths now lead elsewhere)."""
        size = len(parts)
        gone = [key for key in self._open if key[:size] == tuple(parts)]
        for key in gone:
            os.close(self._open.pop(key))

    def close(self) -> None:
        while self._open:
            os.close(self._open.popitem()[1])


@contextmanager
def _parent_dir(
    layout: Layout, parts: Sequence[str], folders: BatchFolders | None
) -> Iterator[int]:
    """The folder `parts`: the batch's descriptor of it, or opened from the root down."""
    if folders is not None:
        yield folders.descriptor(parts)
        return
    with opened_dir(layout, parts) as parent:
        yield parent


def restore(layout: Layout, slot: Path, path: Path) -> None:
    """Undo step 2 when step 3 failed: rename the slot's files back to `path`, then remove the
    slot (its `origin.json` would make `recover` finish the delete at the next open)."""
    parts = parts_inside(layout, path)
    with (
        opened_dir(layout, parts[:-1]) as parent,
        opened_dir(layout, parts_inside(layout, slot)) as into,
    ):
        os.rename(FILES, parts[-1], src_dir_fd=into, dst_dir_fd=parent)
    purge(layout, slot)


def purge(layout: Layout, path: Path) -> None:
    """Step 4: remove `path` (in the store) and everything under it, following no link."""
    parts = parts_inside(layout, path)
    try:
        with opened_dir(layout, parts[:-1]) as parent:
            remove_tree(parent, parts[-1])
    except FileNotFoundError:
        return


def empty(layout: Layout, slot: Path, trash_fd: int | None = None) -> None:
    """Step 4 keeping the slot: remove what is in it (`ORIGIN` first, see `_names`)."""
    with _slot_dir(layout, slot, trash_fd) as folder:
        for name in _names(folder):
            remove_tree(folder, name)


@contextmanager
def _slot_dir(layout: Layout, slot: Path, trash_fd: int | None) -> Iterator[int]:
    """A descriptor of `slot`: opened in `trash_fd` (`SpareSlots.trash_fd`) when it is a
    folder of the trash, else from the root down (`opened_dir`)."""
    if trash_fd is None or os.path.dirname(slot) != os.fspath(layout.trash):
        with opened_dir(layout, parts_inside(layout, slot)) as folder:
            yield folder
        return
    folder = _open_child(trash_fd, os.path.basename(slot), layout.trash)
    try:
        yield folder
    finally:
        os.close(folder)


def parts_inside(layout: Layout, path: Path | str) -> list[str]:
    """The names leading from the store root to `path` (as the store spelt it), or StoreError.

    Split as `pathlib` does (repeated slashes and `.` dropped, `..` kept and refused), on the
    string: a delete calls this four times, and `Path.relative_to` was a tenth of its time."""
    text, root = os.fspath(path), os.fspath(layout.root)
    if text.startswith("//") or root.startswith("//"):  # pathlib's own rule for a leading //
        return _parts_inside_by_pathlib(layout, path)
    names = [name for name in text.split("/") if name not in ("", ".")]
    root_names = [name for name in root.split("/") if name not in ("", ".")]
    inside = text.startswith("/") == root.startswith("/") and (
        names[: len(root_names)] == root_names
    )
    if not inside:
        raise StoreError(f"refusing to touch {path}: it is not inside the store {layout.root}")
    return _checked_parts(path, names[len(root_names) :])


def _parts_inside_by_pathlib(layout: Layout, path: Path | str) -> list[str]:
    try:
        parts = list(Path(path).relative_to(layout.root).parts)
    except ValueError:
        raise StoreError(
            f"refusing to touch {path}: it is not inside the store {layout.root}"
        ) from None
    return _checked_parts(path, parts)


def _checked_parts(path: Path | str, parts: list[str]) -> list[str]:
    if not parts or any(part in ("..", "") for part in parts):
        raise StoreError(f"refusing to touch {path}: it is the store itself or leaves it")
    return parts


@contextmanager
def opened_dir(layout: Layout, parts: Sequence[str], create: Sequence[str] = ()) -> Iterator[int]:
    """A descriptor of the folder `parts` below the root, opened one name at a time from the
    root down without following links (StoreError if one is a link); then the `create`
    folders, each made if missing and opened the same way."""
    fd = os.open(layout.real_root, DIR_FLAGS)
    try:
        for index, part in enumerate((*parts, *create)):
            if index >= len(parts):
                with suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            child = _open_child(fd, part, layout.root.joinpath(*parts[:index]))
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_child(fd: int, name: str, where: Path) -> int:
    child = open_subdir(fd, name)
    if child is None:
        raise StoreError(
            f"refusing to touch {where / name}: it is a symbolic link or not a folder; "
            "replace the link with a real folder"
        )
    return child


def _is_link(name: str, folder: int) -> bool:
    return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)


def open_subdir(parent: int, name: str) -> int | None:
    """`name` in `parent` opened as a folder; None if it is a file or a link (never followed)."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in LINK_ERRORS:
            return None
        raise


def remove_tree(parent: int, name: str) -> None:
    """Remove `name` in folder `parent` and everything under it; links are unlinked as links.

    An explicit stack of open folders (no recursion): each one is reached from its parent's
    descriptor, so nothing is resolved by path twice. What a folder holds is unlinked as its
    listing says (`_listed`): only names listed as folders are opened as folders, and one
    that has become a folder since is opened when its unlink is refused (opening every name
    as a folder first cost a failed `open` and a Python exception per file: emptying a slot
    of one file took 102 -> 91 us of CPU, of four 164 -> 157 us, medians of six here).
    """
    fd = open_subdir(parent, name)
    if fd is None:
        os.unlink(name, dir_fd=parent)
        return
    frames = [(parent, name, fd, iter(_listed(fd)))]
    try:
        while frames:
            above, folder_name, folder, children = frames[-1]
            child = next(children, None)
            if child is None:
                frames.pop()
                os.close(folder)
                os.rmdir(folder_name, dir_fd=above)
                continue
            child_name, listed_as_folder = child
            sub = open_subdir(folder, child_name) if listed_as_folder else None
            if sub is None:
                sub = _unlink_or_open(folder, child_name)
            if sub is not None:
                frames.append((folder, child_name, sub, iter(_listed(sub))))
    finally:
        for frame in frames:
            os.close(frame[2])


def _unlink_or_open(folder: int, name: str) -> int | None:
    """Unlink `name` (gone already is fine); if it is a folder after all, open it instead."""
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.EISDIR, errno.EPERM):  # what unlinking a folder fails with
            raise
        sub = open_subdir(folder, name)
        if sub is None:
            raise
        return sub
    return None


def _listed(folder: int) -> list[tuple[str, bool]]:
    """`_names`, each with whether the listing says it is a folder (never following a link:
    the type is the listing's own, or an lstat where the file system gives none)."""
    with os.scandir(folder) as entries:
        listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    return sorted(listed, key=lambda item: item[0] != ORIGIN)


def _names(folder: int) -> list[str]:
    """The folder's names, `ORIGIN` first: a slot loses its intent before its files, so a
    crash half-way through a purge never leaves an `origin.json` without its files, which
    `recover` would take for a delete still to be done (and a checkpoint made again under
    that name since would go)."""
    return [name for name, _ in _listed(folder)]


def recover(layout: Layout) -> list[Path]:
    """Finish every interrupted delete and drop staged leftovers; return the slots removed."""
    try:
        names = sorted(layout.trash.iterdir())
    except FileNotFoundError:
        return []
    for intent in (path for path in names if path.name.endswith(INTENT)):
        _finish_batch(layout, intent)
    slots = [path for path in names if not path.name.endswith(INTENT)]
    for slot in slots:
        _finish_move(layout, slot, slot / ORIGIN)
        purge(layout, slot)
    return slots


def _finish_batch(layout: Layout, intent: Path) -> None:
    """Move in the files of each delete of an intent whose files were not yet moved, then
    remove the intent (unreadable: nothing is finished, see `_finish_move`)."""
    if intent.is_file() and not intent.is_symlink():
        with suppress(OSError, ValueError):
            deletes = read_json(os.fspath(intent)).get("deletes")
            for origin in deletes if isinstance(deletes, list) else []:
                slot_name = origin.get("slot") if isinstance(origin, dict) else None
                if _is_slot_name(slot_name):
                    _move_in(layout, layout.trash / str(slot_name), origin)
    purge(layout, intent)


def _finish_move(layout: Layout, slot: Path, origin_file: Path) -> None:
    """If `slot` was prepared (its `origin.json`) but its files never moved, move them now."""
    if not _awaits_files(slot):
        return
    try:
        origin = read_json(os.fspath(origin_file))
    except (OSError, ValueError):
        return  # no readable intent (e.g. a crash while writing it): nothing to finish
    _move_in(layout, slot, origin)


def _move_in(layout: Layout, slot: Path, origin: dict[str, object]) -> None:
    """Move the checkpoint `origin` names into `slot`, unless its files are already there;
    anything doubtful (a bad id, a link, no such slot) leaves the checkpoint as it is."""
    if not _awaits_files(slot):
        return
    try:
        run_id = checked_run_id(str(origin["run_id"]))
        checkpoint_id = str(origin["checkpoint_id"])
        checked_checkpoint_id(checkpoint_id)
    except (ValueError, KeyError, TypeError, InvalidRequestError):
        return
    path = _origin_path(layout, origin, run_id, checkpoint_id)
    if path is not None and os.path.lexists(path):
        try:
            move(layout, path, slot)
        except (OSError, StoreError):
            return  # leave the checkpoint as it is rather than touch anything doubtful


def _is_slot_name(name: object) -> bool:
    """A plain name in `trash/` (the intent is read back from a file: trust nothing)."""
    return isinstance(name, str) and "/" not in name and name not in ("", ".", "..")


def _awaits_files(slot: Path) -> bool:
    """A real folder (not a link) without its `files` yet."""
    return slot.is_dir() and not slot.is_symlink() and not os.path.lexists(slot / FILES)


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
