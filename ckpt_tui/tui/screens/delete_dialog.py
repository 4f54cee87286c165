"""Confirm a deletion: what goes, how much it frees, what is risky; Cancel is the default.

Small safe sets confirm with `y`; big or risky ones (over 10, or any final, resume-point or
public checkpoint) need the word `delete` typed. "Expire in 1 day instead" is the undoable way.

A dialog that asks for the word opens with focus in its text box, and its one-letter keys
(y, n, e) work only while a button has focus: typed letters are the word, never a shortcut.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar, Literal

from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ckpt_tui.actions.bulk_action import EXPIRE_INSTEAD_TEXT
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.sizes import format_size, format_total, total
from ckpt_tui.timekeeping.ttl import format_created
from ckpt_tui.tui.screens.ttl_dialog import PREVIEW_ROWS, more_line
from ckpt_tui.words import count_of, plural

DeleteChoice = Literal["cancel", "delete", "expire"]

CONFIRM_WORD = "delete"
MAX_QUICK_DELETE = 10
"""More checkpoints than this at once need the word typed, as do final/best/resume/public ones."""
DELETE_FIXED_LINES = 12
"""Lines of the dialog other than listed checkpoints and warnings (the typed word adds 4)."""
FLAG_WORDS = ("final", "best", "resume", "public", "rolling")


def risky_counts(rows: Sequence[CheckpointRow]) -> tuple[int, int, int]:
    """How many rows are final, resume points and public."""
    finals = sum(row.final for row in rows)
    resumes = sum(row.resume_point for row in rows)
    publics = sum(row.public for row in rows)
    return finals, resumes, publics


def needs_typed_word(rows: Sequence[CheckpointRow]) -> bool:
    return len(rows) > MAX_QUICK_DELETE or any(risky_counts(rows)) or any(r.best for r in rows)


def warnings(rows: Sequence[CheckpointRow], hidden_count: int) -> list[str]:
    """One line per reason to think twice."""
    finals, resumes, publics = risky_counts(rows)
    lines = []
    if finals:
        verb = plural(finals, "is a final checkpoint", "are final checkpoints")
        lines.append(f"⚠ {finals:,} {verb}: the end result of a run")
    bests = sum(row.best for row in rows)
    if bests:
        verb = plural(bests, "is the best checkpoint", "are best checkpoints")
        lines.append(f"⚠ {bests:,} {verb} of its run, as the trainer judged it")
    if resumes:
        verb = plural(resumes, "is a resume point", "are resume points")
        lines.append(f"⚠ {resumes:,} {verb}: training resumes from it")
    if publics:
        verb = plural(publics, "is public", "are public")
        lines.append(f"⚠ {publics:,} {verb}: others may be using it")
    if hidden_count:
        verb = plural(hidden_count, "is", "are")
        lines.append(f"⚠ {hidden_count:,} of these {verb} hidden by the current filter")
    return lines


def freed_text(rows: Sequence[CheckpointRow]) -> Text:
    """'Frees 3.6 GiB', 'Frees at least 1.2 GiB (2 sizes unknown)'; plus 'cannot be undone'."""
    sizes = total(row.size for row in rows if not row.is_missing)
    text = Text("Frees ")
    if sizes.is_all_unknown or sizes.part_count == 0:
        text.append("an unknown amount", style="bold")
    else:
        text.append(format_total(sizes), style="bold")
    if sizes.unknown_count and not sizes.is_all_unknown:
        text.append(f" ({count_of(sizes.unknown_count, 'size')}")
        text.append(" unknown)")
    text.append(". This cannot be undone.")
    return text


def rows_table(rows: Sequence[CheckpointRow], now: datetime, limit: int) -> Table:
    """Name, run, size, created and flags of the first `limit` rows, as plain text."""
    table = Table(box=None, pad_edge=False, show_edge=False, expand=True, header_style="bold")
    backends = {row.backend for row in rows}
    several = len(backends) > 1
    table.add_column("Checkpoint", ratio=3, no_wrap=True, overflow="ellipsis")
    if several:  # which backend each one goes from, its name whole up to 16 cells
        widest = min(max(map(len, backends)), 16)
        table.add_column("Backend", min_width=widest, no_wrap=True, overflow="ellipsis")
    table.add_column("Run", ratio=2, no_wrap=True, overflow="ellipsis")
    table.add_column("Kind", no_wrap=True)
    table.add_column("Size", justify="right", no_wrap=True)
    table.add_column("Created", no_wrap=True)
    table.add_column("Flags", no_wrap=True)
    for row in rows[:limit]:
        size = "-" if row.is_missing else format_size(row.size, short=True)
        flags = " ".join(word for word in row.flags() if word in FLAG_WORDS)
        created = Text(format_created(row.created, now))
        cells = (row.name, *((row.backend,) if several else ()), row.run_name, row.kind, size)
        table.add_row(*map(Text, cells), created, Text(flags))
    more = more_line(min(limit, len(rows)), len(rows))
    if more is not None:
        table.add_row(more)
    return table


class DeleteDialog(ModalScreen[DeleteChoice]):
    """Delete `rows`? Returns "cancel", "delete" or "expire" (set a 1-day TTL instead)."""

    DEFAULT_CLASSES = "dialog"

    AUTO_FOCUS = "#delete-word, #delete-cancel"
    """The first in the dialog: the word's box when the word is needed, else Cancel."""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "choose('cancel')", "Cancel"),
        Binding("n", "letter('cancel')", "Cancel"),
        Binding("y", "letter('delete')", "Delete"),
        Binding("e", "letter('expire')", f"Expire in {EXPIRE_INSTEAD_TEXT} instead"),
    ]

    def __init__(
        self,
        rows: Sequence[CheckpointRow],
        hidden_count: int,
        now: datetime,
        where: str,
        refusals: Sequence[str] = (),
    ) -> None:
        """`where`: 'on BACKEND', a line per backend when the rows span several; `refusals`:
        e.g. a read-only backend's part that is left out."""
        super().__init__()
        self.rows = list(rows)
        self.hidden_count = hidden_count
        self.now = now
        self.where = where
        self.needs_word = needs_typed_word(self.rows)
        self.warnings = [*refusals, *warnings(self.rows, hidden_count)]

    def compose(self) -> ComposeResult:
        count = len(self.rows)
        with Vertical(id="delete-box", classes="dialog-box -error"):
            title = f"Delete {count_of(count, 'checkpoint')}?"
            yield Static(Text(title), id="delete-title", classes="dialog-title")
            yield Static(Text(self.where), id="delete-backend", classes="dialog-backend")
            yield Static("", id="delete-rows")
            yield Static(freed_text(self.rows), id="delete-freed")
            for line in self.warnings:
                yield Static(Text(line), classes="warning")
            if self.needs_word:
                yield Label(f"To confirm, type {CONFIRM_WORD} and press Enter:")
                yield Input(placeholder="type the word here", id="delete-word")
            with Horizontal(id="delete-buttons", classes="dialog-buttons"):
                yield Button("Cancel", id="delete-cancel")
                yield Button(
                    "Delete", variant="error", id="delete-confirm", disabled=self.needs_word
                )
                yield Button(
                    f"Expire in {EXPIRE_INSTEAD_TEXT} instead",
                    variant="warning",
                    id="delete-expire",
                )
            yield Static(self.hint(), id="delete-hint", classes="dialog-hint")

    def hint(self) -> str:
        if self.needs_word:
            return f"type {CONFIRM_WORD} + enter · esc: cancel · tab: to the buttons"
        return (
            f"y: delete · n or esc: cancel · e: expire in {EXPIRE_INSTEAD_TEXT} instead (undoable)"
        )

    def on_mount(self) -> None:
        self.show_rows(self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self.show_rows(event.size.height)

    def show_rows(self, height: int) -> None:
        """As many rows as fit (up to 8): the buttons must stay on screen at 80x24."""
        fixed = DELETE_FIXED_LINES + len(self.warnings) + (4 if self.needs_word else 0)
        fixed += self.where.count("\n")
        limit = max(1, min(PREVIEW_ROWS, height - fixed))
        self.query_one("#delete-rows", Static).update(rows_table(self.rows, self.now, limit))

    def word_typed(self) -> bool:
        return self.query_one("#delete-word", Input).value.strip() == CONFIRM_WORD

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Letters are shortcuts only on the buttons of a dialog that asks for the word.

        The box takes the letters typed into it; this also covers a key that arrives before
        the box has focus, in a burst right after `d`.
        """
        if action == "letter" and self.needs_word:
            return isinstance(self.focused, Button)
        return True

    def action_letter(self, choice: DeleteChoice) -> None:
        if choice == "delete":
            self.action_confirm()
        else:
            self.dismiss(choice)

    def action_confirm(self) -> None:
        """`y`: delete at once if the set is small and safe; otherwise point at the input."""
        if not self.needs_word:
            self.dismiss("delete")
            return
        self.query_one("#delete-word", Input).focus()
        hint = self.query_one("#delete-hint", Static)
        hint.update(f"Type the word {CONFIRM_WORD} into the box and press Enter to delete")
        hint.add_class("-attention")

    def action_choose(self, choice: DeleteChoice) -> None:
        self.dismiss(choice)

    @on(Input.Changed, "#delete-word")
    def word_changed(self) -> None:
        self.query_one("#delete-confirm", Button).disabled = not self.word_typed()

    @on(Input.Submitted, "#delete-word")
    def word_submitted(self) -> None:
        if self.word_typed():
            self.dismiss("delete")
        else:
            self.app.bell()
            self.action_confirm()

    @on(Button.Pressed, "#delete-confirm")
    def delete_pressed(self) -> None:
        if not self.needs_word or self.word_typed():
            self.dismiss("delete")

    @on(Button.Pressed, "#delete-cancel")
    def cancel_pressed(self) -> None:
        self.dismiss("cancel")

    @on(Button.Pressed, "#delete-expire")
    def expire_pressed(self) -> None:
        self.dismiss("expire")
