"""Deleting the files of a `file://` location (obstore's local store) without following links.

obstore's local store deletes by path: a folder swapped for a link between the listing's check
(`place.refuse_links`) and the delete is followed, and a file outside the store goes. Here
each folder is opened from the store's root down, one name at a time, without following a link
(`O_NOFOLLOW`, as the folder store's trash does), and each file is removed relative to its
folder's descriptor (`unlinkat`): a link met on the way is refused, never followed; a file that
is itself a link is removed as a link (its target stays).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack

from ckpt_tui.store.names import climbs
from ckpt_tui.store.trash import DIR_FLAGS, open_subdir
from ckpt_tui.store.unread import is_gone, why


def unlink_below(root: str, keys: Sequence[str]) -> dict[str, str]:
    """Delete `keys` (`/`-separated paths below the folder `root`); key -> why it was not
    deleted (a file already gone counts as deleted)."""
    errors: dict[str, str] = {}
    with ExitStack() as closing:
        folders: dict[str, int | None] = {"": os.open(os.path.realpath(root), DIR_FLAGS)}
        closing.callback(_close_all, folders)
        for key in keys:
            if climbs(key):
                errors[key] = "an empty, '.' or '..' part: not a file below the store"
                continue
            folder, _, name = key.rpartition("/")
            fd = _folder(folders, folder)
            if fd is None:
                errors[key] = f"{folder} is a link or not a folder: links are never followed"
                continue
            try:
                os.unlink(name, dir_fd=fd)
            except OSError as exc:
                if not is_gone(exc):
                    errors[key] = why(exc)
    return errors


def _folder(folders: dict[str, int | None], path: str) -> int | None:
    """The descriptor of folder `path`, opened below its parent's (kept in `folders`); None
    when it, or a folder above it, is a link or no folder."""
    if path in folders:
        return folders[path]
    parent_path, _, name = path.rpartition("/")
    parent = _folder(folders, parent_path)
    try:
        folders[path] = None if parent is None else open_subdir(parent, name)
    except OSError:
        folders[path] = None
    return folders[path]


def _close_all(folders: dict[str, int | None]) -> None:
    for fd in folders.values():
        if fd is not None:
            os.close(fd)
