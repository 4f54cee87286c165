"""The filter box: an Input that keeps the keys of one burst in the order they were typed.

Textual hands each key to whichever widget has focus when the key is read, not when it is
handled. Over SSH one read often holds several keys: in "/run<enter>j" the "j" is already
queued here, for the box, before "enter" moves the focus back to the table. So the box
finishes the filter itself on enter or escape, at once, and passes any key that reaches it
after losing focus back to the app, to go where the focus is now.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.widgets import Input


class FilterBox(Input):
    """A one-line filter; enter keeps the filter, escape clears it (see the module doc)."""

    def __init__(
        self, on_done: Callable[[bool], None], *, placeholder: str = "", id: str | None = None
    ) -> None:
        """`on_done(keep)` runs when the user leaves the box: keep is True for enter."""
        super().__init__(placeholder=placeholder, id=id)
        self.on_done = on_done

    def on_key(self, event: events.Key) -> None:
        if self.screen.focused is not self:
            event.prevent_default()  # not ours any more: Input must not type it
            event.stop()
            self.app.post_message(events.Key(event.key, event.character))
        elif event.key in ("enter", "escape"):
            event.prevent_default()
            event.stop()
            self.on_done(event.key == "enter")
