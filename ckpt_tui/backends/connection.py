"""A backend with the client that talks to it: what the command line builds and hands on."""

from __future__ import annotations

import msgspec

from ckpt_tui.backends.descriptor import Backend
from ckpt_tui.client import CheckpointClient


class Connection(msgspec.Struct, frozen=True):
    """One open backend: its description and its own client (one client per backend).

    Whoever builds it (the command line) closes it: `await connection.client.aclose()`.
    """

    backend: Backend
    client: CheckpointClient
    problem: str | None = None
    """Why it cannot be used (e.g. its configured key variable is unset): shown as its
    error, and nothing is sent."""

    @property
    def name(self) -> str:
        return self.backend.name
