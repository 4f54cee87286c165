"""The actions log: every change the app made to checkpoints, kept in a plain-text file in the
user's state folder, and read back for what it says was deleted on purpose.

The app appends one entry per action and backend (`SessionLog`, in the TUI), and `prune --yes`
one per backend it deleted on; a join reads the deletions back, so that a checkpoint a training
log names and the user deleted through ckpt-tui is not "missing" after a restart, in the app
and in `ls` alike.

An entry, as the file keeps it:

    2026-12-02 10:00:00 UTC  delete  Deleted 2 of 3; 1 failed  on box1 (http://127.0.0.1:8751)
      ok      tinker://run-a/weights/0001  run sl/run-a
      FAILED  tinker://run-a/weights/0002  run sl/run-a  409: in use
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ckpt_tui.regular_files import open_regular

LOG_FILE_NAME = "actions.log"
READ_AT_MOST = 32 * 1024 * 1024
"""Bytes of the log's end that are read back (about 300,000 deleted checkpoints): older
deletions then show as "missing" again, as before the log was read at all."""


@dataclass(frozen=True)
class LogItem:
    """One checkpoint's outcome; the message says why it failed."""

    path: str
    run: str
    ok: bool
    message: str = ""


@dataclass
class LogEntry:
    """One action over some checkpoints: action "delete", summary "Deleted 38 of 40; 2 failed"."""

    at: datetime
    action: str
    summary: str
    items: list[LogItem] = field(default_factory=list)
    backend: str = ""
    """The backend it went to, as `Backend.describe` says: 'box1 (http://127.0.0.1:8751)'."""

    @property
    def failed(self) -> list[LogItem]:
        return [item for item in self.items if not item.ok]

    @property
    def ok_count(self) -> int:
        return sum(1 for item in self.items if item.ok)


def state_log_file(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME/ckpt-tui/actions.log`, else `~/.local/state/ckpt-tui/actions.log`."""
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "ckpt-tui" / LOG_FILE_NAME


def utc_stamp(at: datetime) -> str:
    at = at.astimezone(timezone.utc) if at.tzinfo else at
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


OK_MARK, FAILED_MARK = "ok    ", "FAILED"
ON = "  on "


def entry_lines(entry: LogEntry) -> list[str]:
    """The entry as the file keeps it: a heading line, then one line per checkpoint."""
    where = f"{ON}{entry.backend}" if entry.backend else ""
    lines = [f"{utc_stamp(entry.at)}  {entry.action}  {entry.summary}{where}"]
    for item in entry.items:
        outcome = OK_MARK if item.ok else FAILED_MARK
        line = f"  {outcome}  {item.path}  run {item.run}"
        lines.append(f"{line}  {item.message}" if item.message else line)
    return lines


def append_entry(file: Path, entry: LogEntry) -> str | None:
    """Append `entry` to the log `file`; None, or why it could not be written."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with file.open("a", encoding="utf-8") as out:
            out.write("\n".join(entry_lines(entry)) + "\n\n")
    except OSError as exc:
        return f"could not write {file}: {exc.strerror or exc}"
    return None


HEADING = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  (\S+)  ")
DELETED_ITEM = re.compile(rf"  {OK_MARK}  (\S+)  run ")
BACKEND_PLACE = re.compile(r"\S+ \((.*?)(?:, read-only)?\)")
"""'box1 (http://127.0.0.1:8751, read-only)': the place, however the backend was named then."""


def same_place(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def deleted_paths(text: str, place: str) -> set[str]:
    """The tinker paths the log says were deleted (the server answered ok) on the backend at
    `place` ('http://127.0.0.1:8751', 'local store /data/ckpts'): a backend is known by where
    it is, not by the name it was opened under."""
    found: set[str] = set()
    collecting = False
    for line in text.splitlines():
        heading = HEADING.match(line)
        if heading is not None:
            backend = line.rpartition(ON)[2] if ON in line else ""
            at = BACKEND_PLACE.fullmatch(backend)
            collecting = heading[1] == "delete" and at is not None and same_place(at[1], place)
        elif collecting and (item := DELETED_ITEM.match(line)) is not None:
            found.add(item[1])
    return found


def read_deleted_paths(file: Path | None, place: str) -> set[str]:
    """`deleted_paths` of the end of the log `file` (READ_AT_MOST bytes); none when there is
    no file or it cannot be read: those checkpoints then show as "missing", as they would with
    no log. Regular files only, no link followed, never a blocking open (a FIFO)."""
    if file is None:
        return set()
    try:
        handle = open_regular(file, follow_links=False)
    except OSError:
        return set()
    with handle:
        try:
            st = os.fstat(handle.fileno())
            key, stamp = (str(file), place), (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            kept = _last_read.get(key)
            if kept is not None and kept[0] == stamp:
                return set(kept[1])
            handle.seek(max(0, st.st_size - READ_AT_MOST))
            data = handle.read(READ_AT_MOST)
        except OSError:
            return set()
    found = deleted_paths(data.decode("utf-8", errors="replace"), place)
    _last_read[key] = (stamp, frozenset(found))
    return found


_last_read: dict[tuple[str, str], tuple[tuple[int, ...], frozenset[str]]] = {}
"""The last read of each (log, place), by the file's stamp: every refresh of every backend
reads the log, and a 32 MiB one takes 0.8 s to read and parse; unchanged, it is not read."""
