"""What a scan could not read. Fail closed: a failed read is a problem and makes the lists
incomplete, never an absence; a checkpoint's metadata is dropped only when its parent folder
was read whole and the checkpoint is not in it.

`Unread` maps a folder (or a checkpoint whose files could not all be read) to why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

Unread = dict[str, str]
"""path -> why it could not be read."""

MAX_PROBLEM_LINES = 50
"""Problems said in one answer; more are counted in a last line."""

SEPARATE_STORE = "a separate store; open it with --local"
OTHER_DEVICE = "on another file system (a mount point), not read; open it with --local"


def why(exc: OSError) -> str:
    """An OSError's reason in words ("Permission denied"), without the path it names."""
    return exc.strerror or str(exc)


def is_gone(exc: OSError) -> bool:
    """Whether a failed read says the file is positively gone (removed while the scan ran):
    the one failure that is an absence; any other (EACCES, EIO, ...) is a problem."""
    return isinstance(exc, (FileNotFoundError, NotADirectoryError))


def failed_read(name: str, exc: OSError) -> str | None:
    """'NAME cannot be read: WHY' for a file a checkpoint depends on; None when it is gone."""
    return None if is_gone(exc) else f"{name} cannot be read: {why(exc)}"


def hidden_by(unread: Mapping[str, str], path: str) -> str | None:
    """Why what folder `path` holds may not all have been seen (it, a folder above it or an
    entry in it could not be read), naming the path; None when it was read whole."""
    for bad, reason in unread.items():
        if bad == path or os.path.dirname(bad) == path or path.startswith(bad + os.sep):
            return f"{os.path.basename(bad)}: {reason}"
    return None


def concerning(unread: Mapping[str, str], folder: str) -> Unread:
    """The part of `unread` that may hide something in `folder` (see `hidden_by`)."""
    return {path: reason for path, reason in unread.items() if hidden_by({path: reason}, folder)}


def problem_lines(unread: Mapping[str, str], root: str) -> list[str]:
    """One line per path, relative to the store's root, sorted."""
    return sorted(f"{_relative(path, root)}: {reason}" for path, reason in unread.items())


def _relative(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)
    return "." if rel == os.curdir else rel


@dataclass(frozen=True)
class ReadProblems:
    """What a store could not read, or will not, one line each (at most MAX_PROBLEM_LINES);
    `complete` is false while something could not be read: its lists may lack checkpoints."""

    lines: list[str]
    complete: bool

    @classmethod
    def of(cls, unread: Mapping[str, str], separate: Mapping[str, str], root: str) -> ReadProblems:
        lines = problem_lines(unread, root) + problem_lines(separate, root)
        if len(lines) > MAX_PROBLEM_LINES:
            more = len(lines) - MAX_PROBLEM_LINES + 1
            lines = [*lines[: MAX_PROBLEM_LINES - 1], f"... and {more:,} more"]
        return cls(lines, not unread)
