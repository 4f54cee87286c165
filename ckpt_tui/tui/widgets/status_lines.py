"""The browse screen's two one-line bars: the header (what the backend holds) and the status
line (what the user is doing). Each redraws itself when the data bound to it changes.

Both are fixed-height lines: an update needs no layout pass (one costs ~25 ms per key press).
"""

from __future__ import annotations

from textual.reactive import reactive
from textual.widgets import Static

from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.tui.services import Services
from ckpt_tui.tui.status import StatusFacts, header_text, status_text


class HeaderLine(Static):
    """'ckpt-tui  6 runs · 47 checkpoints · 146.2 GiB · next expiry in 2 hours  │  BACKEND'."""

    # always_update: a new snapshot is never compared with the old one row by row.
    snapshot: reactive[Snapshot | None] = reactive(None, layout=False, always_update=True)

    def __init__(self, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.services = services

    def watch_snapshot(self) -> None:
        self.show()

    def on_resize(self) -> None:
        self.show()  # a narrower line drops totals, then shortens the backend's name

    def show(self) -> None:
        services = self.services
        header = header_text(
            services.describe_backend(),
            None if self.snapshot is None else self.snapshot.catalog,
            services.clock.now(),
            services.storage_rate,
            self.size.width,
            services.backend.short_name(),
            readonly=services.readonly,
        )
        self.update(header, layout=False)


class StatusLine(Static):
    """View and sort on the left; marks, loading progress and errors on the right."""

    facts: reactive[StatusFacts] = reactive(StatusFacts, layout=False)

    def watch_facts(self, facts: StatusFacts) -> None:
        self.update(status_text(facts), layout=False)
