"""Finding what is left of a command a test ran: `marked(command)` exports a variable naming
the test first, which every process the command starts inherits, and `all_gone(mark)` says
whether any of them still lives (whatever group or session it moved to).

    command, mark = marked("yes tml-k | cat", tmp_path)
    ...
    assert all_gone(mark)

A killed process dies when the kernel next runs it and stays a zombie until it is reaped, so
`all_gone` looks again for a while: a hang guard, not a timing assumption (after a kill that
worked it returns at once).
"""

from __future__ import annotations

import time
from pathlib import Path

MARK_VARIABLE = "CKPT_TUI_TEST_MARK"
GUARD_SECONDS = 60.0


def marked(command: str, tmp_path: Path) -> tuple[str, bytes]:
    """`command`, with a variable naming `tmp_path` exported first; and that mark."""
    mark = f"{MARK_VARIABLE}={tmp_path}"
    return f"export {mark}; {command}", mark.encode()


def live_marked(mark: bytes) -> list[int]:
    """The ids of the processes whose environment holds `mark` that are not zombies."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        state = stat[stat.rindex(")") + 2 :].split()[0]  # after "pid (comm) "
        if mark in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def all_gone(mark: bytes, guard: float = GUARD_SECONDS) -> bool:
    """True once no process marked `mark` lives; False if one still does after `guard` s."""
    deadline = time.monotonic() + guard
    while live_marked(mark):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
