"""Which files a piece of code opens under a folder, seen through a Python audit hook.

    with files_opened_under(root) as opened:
        Store.open(root).close()
    assert opened == Counter()          # basename -> times opened

Counts the `open` audit event (builtins.open, io.open, os.open) for paths under `root`
except the store's own `.ckpt-tui/` (its SQLite file is opened by SQLite, not Python). An audit
hook cannot be removed: one is installed on first use and counts only inside the `with`.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ckpt_tui.store.layout import META_DIR

_watching: list[tuple[str, Counter[str]]] = []
_installed = False


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event != "open" or not _watching or not isinstance(args[0], (str, bytes)):
        return
    path = os.path.abspath(os.fsdecode(args[0]))
    for prefix, opened in _watching:
        if path.startswith(prefix) and not path.startswith(prefix + META_DIR + os.sep):
            opened[os.path.basename(path)] += 1


@contextmanager
def files_opened_under(root: Path) -> Iterator[Counter[str]]:
    """The files opened under `root` inside the `with` (basename -> count)."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    watch = (os.fspath(root.resolve()) + os.sep, Counter[str]())
    _watching.append(watch)
    try:
        yield watch[1]
    finally:
        _watching.remove(watch)
