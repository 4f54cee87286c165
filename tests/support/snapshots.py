"""Pieces of the snapshot tests: the `snap_compare` fixture's type and a key-pressing run_before."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.pilot import Pilot
from textual.screen import ModalScreen

SnapCompare = Callable[..., bool]


def pressing(*keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """A `run_before` that waits for the dialog to open (a worker pushes it), then presses keys."""

    async def run_before(pilot: Pilot[None]) -> None:
        for _ in range(100):
            if isinstance(pilot.app.screen, ModalScreen) and pilot.app.focused is not None:
                break
            await pilot.pause()
        assert isinstance(pilot.app.screen, ModalScreen), "the dialog did not open"
        await pilot.press(*keys)

    return run_before
