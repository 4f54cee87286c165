"""What this session did to checkpoints: one entry per action, with each item's outcome.

Textual-free, so the actions can record outcomes and tests can read them without a UI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

LogItem = tuple[str, bool, str]
"""(tinker_path, ok, message): one checkpoint's outcome; the message says why it failed."""


@dataclass
class LogEntry:
    """One action over some checkpoints: action "delete", summary "Deleted 38 of 40; 2 failed"."""

    at: datetime
    action: str
    summary: str
    items: list[LogItem] = field(default_factory=list)

    @property
    def failed(self) -> list[LogItem]:
        return [item for item in self.items if not item[1]]

    @property
    def ok_count(self) -> int:
        return sum(1 for item in self.items if item[1])


@dataclass
class SessionLog:
    """Every action of the session, oldest first (the screen shows them newest first)."""

    entries: list[LogEntry] = field(default_factory=list)

    def add(self, entry: LogEntry) -> None:
        self.entries.append(entry)

    def newest_first(self) -> list[LogEntry]:
        return list(reversed(self.entries))
