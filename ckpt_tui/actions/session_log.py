"""What this session did to checkpoints: one entry per action, with each item's outcome.

Textual-free, so the actions can record outcomes and tests can read them without a UI. Every
entry is also appended to a plain-text file in the user's state folder, so that "what did I
delete yesterday" has an answer after the app is closed; the file's format, and the reading
back of its deletions by every join, live in the core (`ckpt_tui.catalog.actions_log`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ckpt_tui.catalog.actions_log import LogEntry, LogItem, append_entry, state_log_file

__all__ = ["LogEntry", "LogItem", "SessionLog", "state_log_file"]


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
        return None if self.file is None else append_entry(self.file, entry)

    def newest_first(self) -> list[LogEntry]:
        return list(reversed(self.entries))
