"""The Textual app: holds each backend's client, the clock and the settings; the screens do
the rest."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input

from ckpt_tui.actions.session_log import SessionLog, state_log_file
from ckpt_tui.backends import Backend, Connection
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.client import CheckpointClient
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock
from ckpt_tui.training.logdirs import Metrics
from ckpt_tui.tui.commands import ACTION_COMMANDS, BROWSE_COMMANDS, key_label
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.screens.quit_dialog import QuitDialog

STYLESHEET = Path(__file__).with_name("app.tcss")
"""The one stylesheet: every screen's and dialog's rules."""
DEFAULT_POLL_SECONDS = 30.0
LOG_CHECK_SECONDS = 2.0
FRAMEWORK_TWINS = ("Keys", "Quit")
"""Textual's palette entries that ours already cover."""


class CkptApp(App[None]):
    """ckpt-tui: browse and act on checkpoints through the checkpoint REST API only."""

    CSS_PATH = STYLESHEET
    TITLE = "ckpt-tui"
    # ctrl+c quits as q does (asking first while an action runs), rather than a toast that
    # says which key quits; but in a text box it copies, as Textual's text boxes do. Priority:
    # the decision is made here, not by whichever binding on the way happens to skip it.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True)
    ]

    def __init__(
        self,
        connections: Sequence[Connection],
        log_settings: LogDirSettings,
        *,
        clock: Clock = SYSTEM_CLOCK,
        poll_interval: float = DEFAULT_POLL_SECONDS,
        log_check_interval: float = LOG_CHECK_SECONDS,
    ) -> None:
        super().__init__()
        if not connections:
            raise ValueError("the app needs at least one backend")
        self.connections = {connection.name: connection for connection in connections}
        """Each backend's own client, by backend name, in the order given."""
        self.log_settings = log_settings
        self.clock = clock
        self.poll_interval = poll_interval
        self.log_check_interval = log_check_interval
        self.metrics_cache: dict[str, Metrics] = {}
        self.session_log = SessionLog(file=state_log_file())

    @property
    def backends(self) -> list[Backend]:
        return [connection.backend for connection in self.connections.values()]

    @property
    def readonly(self) -> bool:
        """Every backend refuses changes (--readonly, or each one's own setting)."""
        return all(backend.readonly for backend in self.backends)

    def client(self, backend: str) -> CheckpointClient:
        """The client of the backend named `backend` (its owner for every change)."""
        return self.connections[backend].client

    def describe_backend(self, name: str | None = None) -> str:
        """Where the app talks to: the backend `name`, or every backend."""
        if name is not None:
            return self.connections[name].backend.describe()
        backends = self.backends
        if len(backends) == 1:
            return backends[0].describe()
        return f"{len(backends)} backends: {', '.join(backend.name for backend in backends)}"

    def get_default_screen(self) -> Screen[None]:
        return BrowseScreen(self)

    def browse_screen(self) -> BrowseScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, BrowseScreen)), None)

    def running_action(self) -> str | None:
        """What a change or download still running says it is doing ("Deleting 12 of 40…"),
        or None."""
        browse = self.browse_screen()
        return None if browse is None else browse.running_text()

    async def action_quit(self) -> None:
        """q, ctrl+c and ctrl+q: quit at once, or ask first while a change is still running."""
        running = self.running_action()
        if running is None:
            self.exit()
        elif not isinstance(self.screen, QuitDialog):
            dialog = QuitDialog(self.running_action, self.describe_backend())
            self.push_screen(dialog, self.quit_chosen)

    async def action_interrupt(self) -> None:
        """ctrl+c: in a text box, copy its selected text and never quit (a user typing a
        filter or a TTL does not expect to lose the session); while an action or a download
        runs, ask to stop it (as esc does); elsewhere quit as q does."""
        box = self.focused
        if isinstance(self.screen, QuitDialog):  # asking already (to quit or to stop)
            return
        browse = self.browse_screen()
        if not isinstance(box, Input) and browse is not None and browse.ask_stop():
            return
        if not isinstance(box, Input):
            await self.action_quit()
        elif box.selected_text:
            self.copy_to_clipboard(box.selected_text)
        else:
            self.notify("In a text box ctrl+c copies: esc leaves the box, ctrl+q quits.")

    def quit_chosen(self, quit_now: bool | None) -> None:
        if quit_now:
            self.exit()

    def _fatal_error(self) -> None:
        """A crash's traceback, printed as the app exits: without the frames' local values.

        Textual's own shows them (`Traceback(show_locals=True)`, with no setting to turn it
        off), and a frame's locals may hold a key, a URL or a file's contents, none of which
        may ever reach the terminal. This overrides that one private method; the rest goes
        through the public `panic`. tests/tui/test_tui_secrets.py fails should it stop being
        called.
        """
        import rich
        from rich.traceback import Traceback

        self.bell()
        self.panic(Traceback(show_locals=False, width=None, suppress=[rich]))

    async def on_unmount(self) -> None:
        """Close every client here, on the loop that used them (closing twice is harmless)."""
        for connection in self.connections.values():
            await connection.client.aclose()

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The palette lists every action of the key bindings, from the same definitions.

        The framework's own "Keys" and "Quit" go: help (`?`) and our quit (which asks while a
        change runs) are listed from the bindings already.
        """
        for system in super().get_system_commands(screen):
            if system.title not in FRAMEWORK_TWINS:
                yield system
        for command in (*BROWSE_COMMANDS, *ACTION_COMMANDS):
            if screen.check_action(command.action, ()) is False:  # e.g. changes, read-only
                continue
            title = f"{command.palette_title or command.title} ({key_label(command)})"
            yield SystemCommand(title, command.help, partial(screen.run_action, command.action))
