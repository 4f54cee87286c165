"""Which files a piece of code opens, or folders it lists, under a folder, seen through a
Python audit hook.

    with files_opened_under(root) as opened:
        Store.open(root).close()
    assert opened == Counter()          # basename -> times opened

Counts the `open` audit event (builtins.open, io.open, os.open) for paths under `root`
except the store's own `.ckpt-tui/` (its SQLite file is opened by SQLite, not Python) and
folders opened as descriptors (`os.O_DIRECTORY`: no file is read); `folders_listed_under`
counts `os.scandir` and `os.listdir` by path relative to `root`. An audit hook cannot be
removed: one is installed on first use and counts only inside the `with`.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from ckpt_tui.store.layout import META_DIR

LISTING_EVENTS = ("os.scandir", "os.listdir")

_watching: list[tuple[tuple[str, ...], str, Counter[str]]] = []
"""(the events counted, the folder watched with a trailing separator, the counts)."""
_installed = False


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not _watching or not args or not isinstance(args[0], (str, bytes)):
        return
    if event == "open" and _opens_a_folder(args):
        return  # a folder held open to stat names from, not a file read
    path = os.path.abspath(os.fsdecode(args[0]))
    for events, prefix, counts in _watching:
        if event not in events or not path.startswith(prefix):
            continue
        if event == "open" and not path.startswith(prefix + META_DIR + os.sep):
            counts[os.path.basename(path)] += 1
        elif event != "open":
            counts[os.path.relpath(path, prefix)] += 1


def _opens_a_folder(args: tuple[object, ...]) -> bool:
    """Whether an `open` event's (path, mode, flags) open a folder (`os.O_DIRECTORY`)."""
    flags = args[2] if len(args) > 2 else None
    return isinstance(flags, int) and bool(flags & os.O_DIRECTORY)


@contextmanager
def _counting(events: tuple[str, ...], root: Path) -> Iterator[Counter[str]]:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    watch = (events, os.fspath(root.resolve()) + os.sep, Counter[str]())
    _watching.append(watch)
    try:
        yield watch[2]
    finally:
        _watching.remove(watch)


def files_opened_under(root: Path) -> AbstractContextManager[Counter[str]]:
    """The files opened under `root` inside the `with` (basename -> count)."""
    return _counting(("open",), root)


def folders_listed_under(root: Path) -> AbstractContextManager[Counter[str]]:
    """The folders under `root` listed inside the `with` (path relative to `root` -> count)."""
    return _counting(LISTING_EVENTS, root)
