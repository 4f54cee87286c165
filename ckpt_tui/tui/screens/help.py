"""Every key, from the same command definitions that make the bindings."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ckpt_tui.tui.commands import ACTION_COMMANDS, BROWSE_COMMANDS, key_label

TABLE_KEYS = (
    ("↑ ↓ / j k", "Move the cursor"),
    ("PgUp PgDn, Home End / g G", "Page, first, last"),
    ("tab / shift+tab", "Switch pane"),
    ("ctrl+p", "Command palette: every action by name"),
)


def help_text() -> Text:
    text = Text()
    sections = (("Browse", BROWSE_COMMANDS), ("Act", ACTION_COMMANDS))
    text.append("Move\n", style="bold underline")
    for keys, what in TABLE_KEYS:
        text.append(f"  {keys:<28}", style="bold")
        text.append(f"{what}\n")
    for title, commands in sections:
        text.append(f"\n{title}\n", style="bold underline")
        for command in commands:
            text.append(f"  {key_label(command):<28}", style="bold")
            text.append(f"{command.title}: {command.help}\n")
    return text


class HelpScreen(ModalScreen[None]):
    """A scrollable list of keys; any of escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(Text("ckpt-tui keys", style="bold"), id="help-title")
            yield Static(help_text())

    def action_close(self) -> None:
        self.dismiss()
