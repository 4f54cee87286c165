"""Running a command in a real pseudo-terminal, for tests of what a person's terminal shows."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import termios

ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def set_window_size(fd: int, columns: int, lines: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))


def read_available(fd: int, wait: float) -> bytes:
    """What the terminal has to read within `wait` seconds (b"" if nothing; EOF reads b"")."""
    ready, _, _ = select.select([fd], [], [], wait)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the child closed its side
        return b""


def screen_text(raw: bytes) -> str:
    return ANSI.sub("", raw.decode("utf-8", errors="replace"))
