"""Quit, or stop, while an action runs? Each says what is still running and what the choice
means; "Keep running" (the choice that changes nothing) is focused, so a stray enter keeps
everything as it is.

What runs is read again while the dialog is open, so its progress is the status line's,
not the one of the moment the key was pressed; it is shown without the status line's "esc
stops", since in the dialog esc keeps the action running."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Static

FOLLOW_SECONDS = 0.25
"""How often the dialog reads the progress again (the status line's own pace)."""
Running = Callable[[], str | None]
"""What runs now, as its progress says it without the stop hint ("Deleting 12 of 40 · …"),
or None once nothing runs."""


class QuitDialog(ModalScreen[bool]):
    """True to quit now, False to keep the action running (the default)."""

    DEFAULT_CLASSES = "dialog"

    AUTO_FOCUS = "#quit-cancel"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "choose(False)", "Keep running"),
        Binding("y", "choose(True)", "Quit now"),
    ]
    QUESTION = "Quit while an action is running?"
    CONFIRM = "Quit now"
    ENDED = "It has ended: nothing runs now, and quitting stops nothing."

    def __init__(
        self,
        running: Running,
        backend: str,
        consequence: str = (
            "Quitting now stops it: the checkpoints not reached yet stay as they are."
        ),
    ) -> None:
        super().__init__()
        self.running = running
        self.backend = backend
        self.consequence = consequence
        self.shown: str | None = running()
        """The progress the dialog shows now (None: the action has ended)."""
        self.following: Timer | None = None
        self.chosen = False
        """Once a choice is made (a key, a button, or the action's end for the stop dialog)
        the dialog is on its way out: nothing more is read, and it closes once."""

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box", classes="dialog-box -warning"):
            yield Static(Text(self.QUESTION), id="quit-title", classes="dialog-title")
            yield Static(self.said(), id="quit-running")
            with Horizontal(id="quit-buttons", classes="dialog-buttons"):
                yield Button("Keep running", id="quit-cancel")
                yield Button(self.CONFIRM, variant="warning", id="quit-confirm")
            hint = f"y: {self.CONFIRM.lower()} · n or esc: keep running"
            yield Static(Text(hint), id="quit-hint", classes="dialog-hint")

    def on_mount(self) -> None:
        self.following = self.set_interval(FOLLOW_SECONDS, self.follow)

    def said(self) -> Text:
        """What runs, where, and what the choice means (plain text: progress names no markup)."""
        if self.shown is None:
            return Text(self.ENDED)
        text = Text(f"Still running on {self.backend}:\n")
        text.append(self.shown, style="bold")
        text.append(f"\n{self.consequence}")
        return text

    def follow(self) -> None:
        """Show the progress as it is now; once the action has ended, say so."""
        if self.chosen or self.app.screen is not self:
            # Another screen on top (the command palette): closing now would close that one.
            # What changed is seen once the dialog is on top again.
            return
        now = self.running()
        if now == self.shown:
            return
        self.shown = now
        self.query_one("#quit-running", Static).update(self.said())
        if now is None:
            self.ended()

    def ended(self) -> None:
        """The action ended while the dialog was open: quitting is still the user's call,
        but there is nothing left to keep running."""
        self.query_one("#quit-cancel", Button).label = "Stay"
        self.query_one("#quit-hint", Static).update(
            Text(f"y: {self.CONFIRM.lower()} · n or esc: stay")
        )

    def choose(self, confirmed: bool) -> None:
        """Close with the choice, once (a key and the action's end may come together)."""
        if self.chosen:
            return
        self.chosen = True
        if self.following is not None:
            self.following.stop()
        self.dismiss(confirmed)

    def action_choose(self, confirmed: bool) -> None:
        self.choose(confirmed)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.choose(event.button.id == "quit-confirm")


class StopDialog(QuitDialog):
    """esc or ctrl+c while an action runs: True to stop it, False to keep it running (the
    default). `consequence` says what stopping keeps and how to carry on. Once the action
    has ended there is nothing to stop: the dialog closes (as "Keep running"), and the
    action's own notice says how it went."""

    QUESTION = "Stop the running action?"
    CONFIRM = "Stop"

    def ended(self) -> None:
        self.choose(False)
