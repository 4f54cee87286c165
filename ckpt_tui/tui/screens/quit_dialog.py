"""Quit, or stop, while an action runs? Each says what is still running and what the choice
means; "Keep running" (the choice that changes nothing) is focused, so a stray enter keeps
everything as it is."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


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

    def __init__(
        self,
        running: str,
        backend: str,
        consequence: str = (
            "Quitting now stops it: the checkpoints not reached yet stay as they are."
        ),
    ) -> None:
        super().__init__()
        self.running = running
        self.backend = backend
        self.consequence = consequence

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box", classes="dialog-box -warning"):
            yield Static(Text(self.QUESTION), id="quit-title", classes="dialog-title")
            text = Text(f"Still running on {self.backend}:\n")
            text.append(self.running, style="bold")
            text.append(f"\n{self.consequence}")
            yield Static(text, id="quit-running")
            with Horizontal(id="quit-buttons", classes="dialog-buttons"):
                yield Button("Keep running", id="quit-cancel")
                yield Button(self.CONFIRM, variant="warning", id="quit-confirm")
            hint = f"y: {self.CONFIRM.lower()} · n or esc: keep running"
            yield Static(Text(hint), id="quit-hint", classes="dialog-hint")

    def action_choose(self, confirmed: bool) -> None:
        self.dismiss(confirmed)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit-confirm")


class StopDialog(QuitDialog):
    """esc or ctrl+c while an action runs: True to stop it, False to keep it running (the
    default). `consequence` says what stopping keeps and how to carry on."""

    QUESTION = "Stop the running action?"
    CONFIRM = "Stop"
