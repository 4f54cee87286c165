"""The browse screen's two one-line bars: the header (what the backend holds) and the status
line (what the user is doing). Each redraws itself when the data bound to it changes.

Both are fixed-height lines: an update needs no layout pass (one costs ~25 ms per key press).
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from ckpt_tui.backends import Fleet
from ckpt_tui.backends.fleet_view import FleetCatalog
from ckpt_tui.tui.screens.browse.services import Services
from ckpt_tui.tui.view.status import StatusFacts, fleet_header, header_text, status_text


class HeaderLine(Static):
    """'ckpt-tui  6 runs · 47 checkpoints · 146.2 GiB · next expiry in 2 hours  │  BACKEND';
    with several backends, the totals for all, then each backend's state and latency."""

    # always_update: a new fleet is never compared with the old one row by row.
    fleet: reactive[Fleet] = reactive(lambda: Fleet(()), layout=False, always_update=True)
    fetching: reactive[frozenset[str]] = reactive(frozenset(), layout=False)

    def __init__(self, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.services = services

    def watch_fleet(self) -> None:
        self.show()

    def watch_fetching(self) -> None:
        self.show()

    def on_resize(self) -> None:
        self.show()  # a narrower line drops totals, then shortens the backend's name

    def show(self) -> None:
        services = self.services
        if len(services.connections) > 1:
            now, width = services.clock.now(), self.size.width
            header = fleet_header(self.fleet, now, width, self.fetching, services.readonly)
        else:
            header = self.one_backend()
        self.update(header, layout=False)

    def one_backend(self) -> Text:
        """The header of the one backend open: its totals, then where it is."""
        services, fleet = self.services, self.fleet
        state = fleet.states[0] if fleet.states else None
        client = next(iter(services.connections.values())).client
        return header_text(
            client.describe(),
            FleetCatalog(fleet) if fleet.snapshots() else None,
            services.clock.now(),
            state.rate if state is not None else None,
            self.size.width,
            client.endpoint.short_name(),
            readonly=services.readonly,
            partial=state is not None and bool(state.snapshot and state.snapshot.incomplete),
        )


class StatusLine(Static):
    """View and sort on the left; marks, loading progress and errors on the right."""

    facts: reactive[StatusFacts] = reactive(StatusFacts, layout=False)

    def watch_facts(self, facts: StatusFacts) -> None:
        self.update(status_text(facts), layout=False)
