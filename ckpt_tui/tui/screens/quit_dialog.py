"""Quit while an action runs? Says what is still running; Cancel (keep running) is focused."""

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

    def __init__(self, running: str, backend: str) -> None:
        super().__init__()
        self.running = running
        self.backend = backend

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box", classes="dialog-box -warning"):
            yield Static(
                Text("Quit while an action is running?"), id="quit-title", classes="dialog-title"
            )
            text = Text(f"Still running on {self.backend}:\n")
            text.append(self.running, style="bold")
            text.append(
                "\nQuitting now stops it: the checkpoints not reached yet stay as they are."
            )
            yield Static(text, id="quit-running")
            with Horizontal(id="quit-buttons", classes="dialog-buttons"):
                yield Button("Keep running", id="quit-cancel")
                yield Button("Quit now", variant="warning", id="quit-confirm")
            yield Static(
                Text("y: quit now · n or esc: keep running"), id="quit-hint", classes="dialog-hint"
            )

    def action_choose(self, quit_now: bool) -> None:
        self.dismiss(quit_now)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit-confirm")
