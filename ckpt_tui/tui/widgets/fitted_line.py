"""One line that never wraps: its long part (a path) is shortened in the middle to fit."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget

from ckpt_tui.words import shorten_middle


class FittedLine(Widget):
    """`label` then `long_part`, on one line as wide as the widget is.

    A path folded over two lines reads as two things and breaks a name in two; its start
    and its end around '…' read as one path, and the end names the file.
    """

    DEFAULT_CSS = """
    FittedLine {
        height: 1;
    }
    """

    def __init__(self, label: str, long_part: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.long_part = long_part

    def render(self) -> Text:
        room = self.content_size.width - cell_len(self.label)
        return Text(self.label + shorten_middle(self.long_part, max(room, 1)))
