"""Ask what to do with a selection that is partly public and partly private."""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

PublishChoice = Literal["publish", "unpublish"]


def question(public_count: int, private_count: int) -> str:
    """'3 of these are public and 5 are private: publish the 5, or unpublish the 3?'"""
    public_verb = "is" if public_count == 1 else "are"
    private_verb = "is" if private_count == 1 else "are"
    return (
        f"{public_count} of these {public_verb} public and {private_count} {private_verb} "
        f"private: publish the {private_count}, or unpublish the {public_count}?"
    )


class PublishDialog(ModalScreen[PublishChoice | None]):
    """Publish the private ones or unpublish the public ones; None if cancelled (the default)."""

    DEFAULT_CSS = """
    PublishDialog { align: center middle; }
    PublishDialog #publish-box {
        width: 72; max-width: 100%; height: auto; max-height: 100%;
        padding: 0 1; border: round $primary; background: $surface;
    }
    PublishDialog #publish-title { text-style: bold; height: 1; }
    PublishDialog #publish-question { height: auto; margin: 1 0; }
    PublishDialog #publish-buttons { height: 3; }
    PublishDialog #publish-buttons Button { margin-right: 2; }
    PublishDialog #publish-hint { color: $text-muted; height: 1; }
    """

    AUTO_FOCUS = "#cancel"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "choose(None)", "Cancel"),
        Binding("p", "choose('publish')", "Publish"),
        Binding("u", "choose('unpublish')", "Unpublish"),
    ]

    def __init__(self, public_count: int, private_count: int) -> None:
        super().__init__()
        self.public_count = public_count
        self.private_count = private_count

    def compose(self) -> ComposeResult:
        with Vertical(id="publish-box"):
            yield Static(Text("Publish or unpublish?"), id="publish-title")
            yield Static(
                Text(question(self.public_count, self.private_count)), id="publish-question"
            )
            with Horizontal(id="publish-buttons"):
                yield Button(f"Publish {self.private_count}", variant="primary", id="publish")
                yield Button(f"Unpublish {self.public_count}", id="unpublish")
                yield Button("Cancel", id="cancel")
            yield Static(Text("p: publish · u: unpublish · n or esc: cancel"), id="publish-hint")

    def action_choose(self, choice: PublishChoice | None) -> None:
        self.dismiss(choice)

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        choices: dict[str | None, PublishChoice | None] = {
            "publish": "publish",
            "unpublish": "unpublish",
        }
        self.dismiss(choices.get(event.button.id))
