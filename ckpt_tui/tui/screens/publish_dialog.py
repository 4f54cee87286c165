"""Confirm publishing or unpublishing: what becomes public, what becomes private; Cancel first.

Making a training state public is not a thing to do by a stray key, so `p` only opens this.
A selection that is partly public asks which way to go. `p` is no key here: `pp` must not
publish.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import ClassVar, Literal

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.tui.screens.delete_dialog import rows_table
from ckpt_tui.tui.screens.ttl_dialog import PREVIEW_ROWS
from ckpt_tui.words import count_of

PublishChoice = Literal["publish", "unpublish"]
PUBLISH_FIXED_LINES = 9
"""Lines of the dialog other than the listed checkpoints (a mixed selection adds 2)."""


def question(public_count: int, private_count: int) -> str:
    """'3 of these are public and 5 are private: publish the 5, or unpublish the 3?'"""
    public_verb = "is" if public_count == 1 else "are"
    private_verb = "is" if private_count == 1 else "are"
    return (
        f"{public_count:,} of these {public_verb} public and {private_count:,} {private_verb} "
        f"private: publish the {private_count:,}, or unpublish the {public_count:,}?"
    )


def title(private: int, public: int) -> str:
    """'Publish 2 checkpoints?', 'Unpublish 1 checkpoint?' or the question for a mix."""
    if private and public:
        return question(public, private)
    count = private or public
    verb = "Publish" if private else "Unpublish"
    return f"{verb} {count_of(count, 'checkpoint')}?"


class PublishDialog(ModalScreen[PublishChoice | None]):
    """Publish the private ones or unpublish the public ones; None if cancelled (the default)."""

    DEFAULT_CLASSES = "dialog"

    AUTO_FOCUS = "#cancel"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "choose(None)", "Cancel"),
        Binding("y", "confirm", "Confirm"),
        Binding("u", "choose('unpublish')", "Unpublish", show=False),
    ]

    def __init__(
        self,
        rows: Sequence[CheckpointRow],
        where: str,
        now: datetime,
        warnings: Sequence[str] = (),
    ) -> None:
        """`where`: 'on BACKEND', a line per backend when the rows span several; `warnings`:
        e.g. a read-only backend's part that is left out."""
        super().__init__()
        self.private = [row for row in rows if not row.public]
        self.public = [row for row in rows if row.public]
        self.where = where
        self.warnings = list(warnings)
        self.now = now

    @property
    def mixed(self) -> bool:
        return bool(self.private and self.public)

    def compose(self) -> ComposeResult:
        with Vertical(id="publish-box", classes="dialog-box -warning"):
            yield Static(
                Text(title(len(self.private), len(self.public))),
                id="publish-title",
                classes="dialog-title",
            )
            yield Static(Text(self.where), id="publish-backend", classes="dialog-backend")
            for line in self.warnings:
                yield Static(Text(line), classes="warning")
            if self.private:
                yield Static(Text("Becomes public:"), classes="publish-heading")
                yield Static("", id="publish-private", classes="publish-rows")
            if self.public:
                yield Static(Text("Becomes private:"), classes="publish-heading")
                yield Static("", id="publish-public", classes="publish-rows")
            with Horizontal(id="publish-buttons", classes="dialog-buttons"):
                yield Button("Cancel", id="cancel")
                if self.private:
                    yield Button(f"Publish {len(self.private):,}", variant="warning", id="publish")
                if self.public:
                    yield Button(f"Unpublish {len(self.public):,}", id="unpublish")
            yield Static(Text(self.hint()), id="publish-hint", classes="dialog-hint")

    def hint(self) -> str:
        if self.mixed:
            return "y: publish · u: unpublish · n or esc: cancel"
        return f"y: {'publish' if self.private else 'unpublish'} · n or esc: cancel"

    def on_mount(self) -> None:
        self.show_rows(self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self.show_rows(event.size.height)

    def show_rows(self, height: int) -> None:
        """As many rows as fit: the buttons must stay on screen at 80x24."""
        fixed = PUBLISH_FIXED_LINES + (2 if self.mixed else 0) + len(self.warnings)
        fixed += self.where.count("\n")
        room = max(2, min(PREVIEW_ROWS, height - fixed))
        limit = max(1, room // 2) if self.mixed else room
        for rows, widget_id in (
            (self.private, "#publish-private"),
            (self.public, "#publish-public"),
        ):
            if rows:
                self.query_one(widget_id, Static).update(rows_table(rows, self.now, limit))

    def action_confirm(self) -> None:
        """`y`: publish the private ones, or unpublish when all of them are public."""
        self.dismiss("publish" if self.private else "unpublish")

    def action_choose(self, choice: PublishChoice | None) -> None:
        if choice == "unpublish" and not self.public:
            return
        self.dismiss(choice)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        choices: dict[str | None, PublishChoice | None] = {
            "publish": "publish",
            "unpublish": "unpublish",
        }
        self.dismiss(choices.get(event.button.id))
