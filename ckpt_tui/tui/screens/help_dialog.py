"""Every key, from the same command definitions that make the bindings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
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


RUNNING_KEYS = (
    ("esc, ctrl+c", "While a change or a download runs: ask to stop it (Keep running is focused)"),
)
"""Keys that act on what runs rather than on checkpoints."""
CLOSE_HINT = "esc, q or ? closes this"
KEY_WIDTH = 30


def help_sections() -> list[tuple[str, list[tuple[str, str]]]]:
    """(title, [(keys, what they do)]) for every key, from the command definitions."""
    sections = [("Move", list(TABLE_KEYS))]
    for title, commands in (("Browse", BROWSE_COMMANDS), ("Act", ACTION_COMMANDS)):
        sections.append((title, [(key_label(c), f"{c.title}: {c.help}") for c in commands]))
    sections[-1][1].extend(RUNNING_KEYS)
    return sections


PROBLEMS_TITLE = "Incomplete list: what could not be read"


def problems_text(problems: Sequence[str]) -> Text:
    """Why the list shown is not whole, a line each (`ckpt-tui ls` says the same)."""
    text = Text()
    text.append(PROBLEMS_TITLE, style="bold underline yellow")
    for problem in problems:
        text.append("\n  " + problem)
    return text


def help_text() -> Table:
    """Two columns: a description that wraps stays in its column, under its own start."""
    grid = Table.grid(padding=(0, 2, 0, 0), expand=True)
    grid.add_column(no_wrap=True, min_width=KEY_WIDTH, max_width=KEY_WIDTH, style="bold")
    grid.add_column(ratio=1)
    for index, (title, entries) in enumerate(help_sections()):
        if index:
            grid.add_row("", "")
        grid.add_row(Text(title, style="bold underline"), "")
        for keys, what in entries:
            grid.add_row(Text("  " + keys), Text(what))
    return grid


class HelpDialog(ModalScreen[None]):
    """A scrollable list of keys; any of escape, q or ? closes it, as its title and frame say."""

    DEFAULT_CLASSES = "dialog"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close"),
    ]

    def __init__(self, problems: Sequence[str] = ()) -> None:
        super().__init__()
        self.problems = problems
        """What the backends could not read while their lists are incomplete: shown first."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box", classes="dialog-box") as box:
            box.border_subtitle = CLOSE_HINT
            title = Text.assemble(("ckpt-tui keys", "bold"), f"  ({CLOSE_HINT})")
            yield Static(title, id="help-title")
            if self.problems:
                yield Static(problems_text(self.problems), id="help-problems")
            yield Static(help_text(), id="help-keys")

    def action_close(self) -> None:
        self.dismiss()
