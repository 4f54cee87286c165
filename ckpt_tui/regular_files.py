"""Opening a file that a person named or a program writes: regular files only, never blocking,
read to a bound.

A FIFO, a device or a folder where a file is expected is refused (NotRegularFileError), not
read: opening a FIFO waits for a writer for good, and `/dev/zero` never ends. The open itself
does not block (O_NONBLOCK), and the file is checked on the opened descriptor (fstat), so no
swap between a check and the open can slip one in. A final symbolic link is followed where
people name the file (keys in `~/.config` are often links to a secrets folder; what it leads
to must still be a regular file), and refused where the store reads (`follow_links=False`).
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO


class NotRegularFileError(OSError):
    """The path is not a regular file (a FIFO, a device, a folder, or a link not followed)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is not a regular file")
        self.strerror = "not a regular file"  # what messages quote, as of any OSError


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = True) -> BinaryIO:
    """Open a regular file for reading without blocking; NotRegularFileError (an OSError whose
    strerror says so) for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(os.fsdecode(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], cap: int) -> bytes:
    """At most `cap + 1` bytes of a regular file (more than `cap`: the caller says it is too
    big); OSError (NotRegularFileError among them) when it cannot be read."""
    with open_regular(path) as handle:
        return handle.read(cap + 1)
