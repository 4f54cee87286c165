"""What the screens need from the app, declared here so no screen imports the app module.

`CkptApp` provides all of it; it hands itself to the browse screen as `Services`.
"""

from __future__ import annotations

from typing import Protocol

from ckpt_tui.actions.session_log import SessionLog
from ckpt_tui.backends import Backend, Connection
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.client import CheckpointClient
from ckpt_tui.timekeeping.clock import Clock
from ckpt_tui.training.logdirs import Metrics


class Services(Protocol):
    """Each backend's connection, the clock, the settings and the session's shared state."""

    connections: dict[str, Connection]
    """Each backend's own client, by backend name, in the order given."""
    log_settings: LogDirSettings
    clock: Clock
    poll_interval: float
    log_check_interval: float
    metrics_cache: dict[str, Metrics]
    session_log: SessionLog

    @property
    def backends(self) -> list[Backend]: ...

    @property
    def readonly(self) -> bool:
        """Every backend refuses changes."""
        ...

    def client(self, backend: str) -> CheckpointClient: ...

    def describe_backend(self, name: str | None = None) -> str: ...
