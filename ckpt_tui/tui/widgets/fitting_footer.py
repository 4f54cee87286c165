"""Textual's footer, showing only the key hints that fit whole.

Textual's footer lays every hint in one row and docks the palette key (`^p palette`) over the
right end: on a narrow terminal a hint is cut in half ("c " with no label at 100 columns) and a
letter of the hint under the palette key shows past it ("^p palettee" at 80). Here the hints
that would reach the palette key are hidden instead, all of them from the first that does not
fit, so the footer reads left to right with nothing cut (`?` lists every key).

Behind a dialog the footer keeps the hints it fitted: the screen below a dialog is laid out
only after a fit would run, so a fit there would see no hint's place and hide none.
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

PALETTE_CLASS = "-command-palette"
"""The class Textual gives the footer's palette key."""

FIT_TRIES = 8
"""Refreshes a fit waits at most for the hints shown again to be laid out."""


class FittingFooter(Footer):
    """A footer whose hints are whole or absent."""

    def bindings_changed(self, screen: Screen[object]) -> None:
        """New bindings: show them while this footer's screen is the one on top (a dialog
        opened over it leaves the hints as they were; its closing brings new bindings)."""
        if screen is self.app.screen:
            super().bindings_changed(screen)

    async def recompose(self) -> None:
        """New bindings (focus moved, a dialog closed): fit the new hints once laid out."""
        await super().recompose()
        self.call_after_refresh(self.fit)

    def on_resize(self, event: events.Resize) -> None:
        """Show every hint again, then hide what the new width cannot hold."""
        for child in self.children:
            child.display = True
        self.call_after_refresh(self.fit)

    def fit(self, tries: int = FIT_TRIES) -> None:
        """Hide the hints from the first that reaches the palette key on.

        A hint hidden by the last fit and shown again has no place until the next layout,
        which on a busy machine can come after this call: seen at x 0 it would stay shown
        past the palette key ("^p paletteo"). So the fit waits for that layout first.
        """
        hints = [child for child in self.children if not child.has_class(PALETTE_CLASS)]
        unplaced = any(hint.display and hint.region.width == 0 for hint in hints)
        if unplaced and self.region.width > 0 and tries > 0:
            self.call_after_refresh(self.fit, tries - 1)
            return
        right = self.region.right
        palette = [child for child in self.children if child.has_class(PALETTE_CLASS)]
        if palette:
            right = min(right, palette[0].region.x)
        cut = False
        for child in self.children:
            if child in palette:
                continue
            cut = cut or child.region.right - trailing_blanks(child) > right
            child.display = not cut


def trailing_blanks(hint: Widget) -> int:
    """The blank cells a hint ends with: the palette key's border may cover those."""
    text = str(hint.render())
    return len(text) - len(text.rstrip(" "))
