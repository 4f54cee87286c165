"""What the plain objects working for the browse screen (its changes, its downloads) use of it.

They name the screen by these protocols, never by its class, so no module imports back.
"""

from __future__ import annotations

from typing import Protocol

from textual.app import App
from textual.notifications import SeverityLevel

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.widgets.fast_table import FastTable


class ScreenHost(Protocol):
    """The app's services, the screen's rows and table, and its notices."""

    services: Services

    def row_cache_of(self, backend: str) -> RowCache:
        """The backend's row cache: its rows carry its name, and its deletions are known."""
        ...

    @property
    def app(self) -> App[object]: ...

    @property
    def is_showing(self) -> bool:
        """Its widgets are there to update: a worker, or a thread's callback, may finish after
        the screen began to go (as the app quits), and must then touch none of them."""
        ...

    @property
    def checkpoints_table(self) -> FastTable[CheckpointRow]: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...
