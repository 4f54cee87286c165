"""The session log: every action taken since start, newest first, with what failed and why."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ckpt_tui.actions.session_log import LogEntry, SessionLog
from ckpt_tui.timekeeping.ttl import format_created
from ckpt_tui.tui.widgets.fitted_line import FittedLine


def entry_text(entry: LogEntry, now: datetime) -> Text:
    """Time, action, summary and backend; then each checkpoint, its run and its outcome.

    Failures come first, with the server's reason.
    """
    text = Text()
    at = entry.at.astimezone(timezone.utc) if entry.at.tzinfo else entry.at
    when = at.strftime("%H:%M:%S")
    text.append(f"{when} ", style="bold")
    text.append(f"({format_created(entry.at, now)})  ", style="dim")
    text.append(f"{entry.action:<9} ", style="bold")
    text.append(entry.summary)
    if entry.backend:
        text.append(f"  on {entry.backend}", style="dim")
    for item in sorted(entry.items, key=lambda item: item.ok):
        text.append("\n    ")
        text.append("✓ " if item.ok else "✗ ", style="green" if item.ok else "bold red")
        text.append(item.path, style="" if item.ok else "bold")
        text.append(f"  {item.run}", style="dim")
        if item.message and not item.ok:
            text.append(f": {item.message}")
    return text


def log_text(log: SessionLog, now: datetime) -> Text:
    """All entries, newest first, separated by blank lines; user text is never markup."""
    if not log.entries:
        return Text("Nothing has been changed in this session yet.", style="dim")
    return Text("\n\n").join(entry_text(entry, now) for entry in log.newest_first())


class SessionLogDialog(ModalScreen[None]):
    """A scrollable view of the session log; escape, q or L closes it."""

    DEFAULT_CLASSES = "dialog"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,L", "close", "Close"),
    ]

    def __init__(self, log: SessionLog, now: datetime) -> None:
        super().__init__()
        self.session_log = log
        self.now = now

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="log-box", classes="dialog-box"):
            count = len(self.session_log.entries)
            title = f"Session log: {count} action{'s' if count != 1 else ''}, newest first (UTC)"
            yield Static(Text(title), id="log-title", classes="dialog-title")
            file = self.session_log.file
            if file is not None:
                yield FittedLine("Also kept in ", str(file), id="log-file")
            yield Static(
                Text("↑ ↓ PgUp PgDn: scroll · esc, q or L: close"),
                id="log-hint",
                classes="dialog-hint",
            )
            yield Static(log_text(self.session_log, self.now), id="log-entries")

    def action_close(self) -> None:
        self.dismiss()
