"""A checkbox whose glyph says whether it is ticked, not only its colour."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox

TICKED = "X"
UNTICKED = " "


class TickBox(Checkbox):
    """`▐X▌` when ticked, `▐ ▌` when not: readable without colour (Textual shows X both ways)."""

    def render(self) -> Content:
        self.BUTTON_INNER = TICKED if self.value else UNTICKED
        return super().render()
