"""What this session did to checkpoints: one entry per action, with each item's outcome.

Textual-free, so the actions can record outcomes and tests can read them without a UI. Every
entry is also appended to a plain-text file in the user's state folder, so that "what did I
delete yesterday" has an answer after the app is closed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

LOG_FILE_NAME = "actions.log"


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


def entry_lines(entry: LogEntry) -> list[str]:
    """The entry as the file keeps it: a heading line, then one line per checkpoint."""
    where = f"  on {entry.backend}" if entry.backend else ""
    lines = [f"{utc_stamp(entry.at)}  {entry.action}  {entry.summary}{where}"]
    for item in entry.items:
        outcome = "ok    " if item.ok else "FAILED"
        line = f"  {outcome}  {item.path}  run {item.run}"
        lines.append(f"{line}  {item.message}" if item.message else line)
    return lines


@dataclass
class SessionLog:
    """Every action of the session, oldest first (the screen shows them newest first).

    With a `file`, each entry is appended to it as it is added; a file that cannot be written
    never loses the entry in memory: `add` returns the reason instead.
    """

    entries: list[LogEntry] = field(default_factory=list)
    file: Path | None = None

    def add(self, entry: LogEntry) -> str | None:
        """Keep `entry`; None, or why the file could not be written."""
        self.entries.append(entry)
        if self.file is None:
            return None
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            with self.file.open("a", encoding="utf-8") as out:
                out.write("\n".join(entry_lines(entry)) + "\n\n")
        except OSError as exc:
            return f"could not write {self.file}: {exc.strerror or exc}"
        return None

    def newest_first(self) -> list[LogEntry]:
        return list(reversed(self.entries))
