"""What the plain objects working for the browse screen (its changes, its downloads) use of it.

They name the screen by this protocol, never by its class, so no module imports back.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

from textual.app import App
from textual.message import Message
from textual.notifications import SeverityLevel

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.widgets.fast_table import FastTable


class ScreenHost(Protocol):
    """What `Changes` and `Downloads` ask of the screen: the app's services, its rows (read
    only), its dialogs (through `app`), notices and workers. They write none of the screen's
    state: what it shows of their work goes to it as messages (`post_message`), and its own
    handlers apply them. A protocol, not the class, so that no module imports the screen back.
    """

    services: Services

    def row_cache_of(self, backend: str) -> RowCache:
        """The backend's row cache: its rows carry its name, and its deletions are known."""
        ...

    @property
    def app(self) -> App[object]: ...

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

    def post_message(self, message: Message) -> bool: ...

    def running_text(self) -> str | None:
        """What runs now, as its progress says it without the stop hint, or None."""
        ...

    def run_worker(
        self, work: Coroutine[Any, Any, None], *, group: str, description: str
    ) -> object: ...
