"""What the screens need from the app, declared here so no screen imports the app module.

`CkptApp` provides all of it; it hands itself to the main screen as `Services`.
"""

from __future__ import annotations

from typing import Protocol

from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.client import Backend, CheckpointClient
from ckpt_tui.clock import Clock
from ckpt_tui.training.logdirs import Metrics
from ckpt_tui.tui.session_log import SessionLog


class Services(Protocol):
    """The backend connection, the clock, the settings and the session's shared state."""

    backend: Backend
    log_settings: LogDirSettings
    clock: Clock
    poll_interval: float
    log_check_interval: float
    readonly: bool
    storage_rate: float | None
    metrics_cache: dict[str, Metrics]
    session_log: SessionLog

    async def get_client(self) -> CheckpointClient: ...

    def describe_backend(self) -> str: ...
