"""One change over checkpoints of several backends: each part goes to its owner's client.

No Textual: the screen runs a `FleetAction` and shows its progress and outcomes. The parts
run side by side, so a slow backend does not hold back the others' changes; each outcome is
known by its row key, (backend, tinker path), and `R` retries only what failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ckpt_tui.actions.bulk_action import ActionKind, BulkAction, progress_text, summary_text
from ckpt_tui.backends.fleet_view import RowKey
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.client import CheckpointClient, Outcome, Stop
from ckpt_tui.timekeeping.rate import RateMeter

FleetProgress = Callable[[str, Outcome], None]
"""Called as `on_progress(backend, outcome)` after each item."""


@dataclass
class FleetAction:
    """`parts`: one BulkAction per backend, by backend name, in the order rows were given."""

    kind: ActionKind
    label: str
    parts: dict[str, BulkAction]

    @classmethod
    def of(
        cls,
        kind: ActionKind,
        rows: Sequence[CheckpointRow],
        label: str = "",
        ttl_for: Mapping[RowKey, int | None] | None = None,
    ) -> FleetAction:
        """The action over `rows`, split by the backend that holds each one."""
        parts: dict[str, BulkAction] = {}
        for row in rows:
            part = parts.get(row.backend)
            if part is None:
                part = parts[row.backend] = BulkAction(kind, [], label)
            part.paths.append(row.tinker_path)
            part.run_names[row.tinker_path] = row.run_name
            if ttl_for is not None:
                part.ttl_for[row.tinker_path] = ttl_for[(row.backend, row.tinker_path)]
        return cls(kind, label, parts)

    def __repr__(self) -> str:
        return f"<FleetAction {self.kind} of {self.count} checkpoints>"

    @property
    def count(self) -> int:
        return sum(len(part.paths) for part in self.parts.values())

    @property
    def keys(self) -> list[RowKey]:
        return [(name, path) for name, part in self.parts.items() for path in part.paths]

    async def run(
        self,
        client_of: Callable[[str], CheckpointClient],
        on_progress: FleetProgress,
        stop: Stop | None = None,
    ) -> None:
        """Every part through its own backend's client, side by side; never raises half-way.
        Once `stop` is asked, no part sends anything more (the rest is "not tried")."""

        async def one(name: str, part: BulkAction) -> None:
            await part.run(client_of(name), lambda _done, _total, o: on_progress(name, o), stop)

        await asyncio.gather(*(one(name, part) for name, part in self.parts.items()))

    @property
    def failed(self) -> dict[RowKey, str]:
        """Each failed item with a short reason."""
        return {
            (name, path): reason
            for name, part in self.parts.items()
            for path, reason in part.failed.items()
        }

    def retry(self) -> FleetAction:
        """The same action over just the items that failed, each on its own backend."""
        parts = {
            name: part.retry(list(part.failed)) for name, part in self.parts.items() if part.failed
        }
        return FleetAction(self.kind, self.label, parts)

    def progress_text(self, done: int, meter: RateMeter | None = None) -> str:
        return progress_text(self.kind, done, self.count, meter)

    def summary(self) -> str:
        """'Deleted 38 of 40; 2 failed', and with several backends where they failed:
        'Deleted 38 of 40; 2 failed (box2: 2)'."""
        ok = sum(outcome.ok for part in self.parts.values() for outcome in part.outcomes)
        not_tried = sum(part.not_tried for part in self.parts.values())
        text = summary_text(self.kind, ok, self.count, not_tried)
        if ok + not_tried < self.count and len(self.parts) > 1:
            where = [
                f"{name}: {len(p.failed) - p.not_tried:,}"
                for name, p in self.parts.items()
                if len(p.failed) > p.not_tried
            ]
            text += f" ({', '.join(where)})"
        return text
