"""Pieces of the screenshot tests: the `snap_compare` fixture's type, a key-pressing run_before."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widgets import Input

SnapCompare = Callable[..., bool]


def pressing(*keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """A `run_before` that waits for the dialog to open (a worker pushes it), then presses keys."""

    async def run_before(pilot: Pilot[None]) -> None:
        for _ in range(100):
            if isinstance(pilot.app.screen, ModalScreen) and pilot.app.focused is not None:
                break
            await pilot.pause()
        assert isinstance(pilot.app.screen, ModalScreen), "the dialog did not open"
        steady_cursors(pilot)
        await pilot.press(*keys)

    return run_before


def steady_cursors(pilot: Pilot[None]) -> None:
    """Text boxes stop blinking: their cursor shows after a key (and stays), so a picture never
    depends on how long a busy machine took between the keys and the screenshot (the cursor
    blinks every 0.5 s)."""
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
