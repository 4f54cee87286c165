"""Which backend owns what a change is asked for, and which backends refuse their part.

No Textual: the screen splits its targets here, and the dialogs show the groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len

from ckpt_tui.backends import Backend, Connection
from ckpt_tui.backends.refusals import group_by_backend, refused_rows
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.sizes import format_total, total
from ckpt_tui.words import count_of

WHERE_WIDTH = 76
"""Cells of a line inside a dialog's frame at 80 columns (the narrowest screen dialogs are
laid out for): each line of `Targets.where` fits in it."""
MIN_PLACE_WIDTH = 16
"""A place is never shortened below this, even after a long backend name."""


def where_line(head: str, backend: Backend) -> str:
    """'HEAD (PLACE)' in WHERE_WIDTH cells, PLACE shortened in the middle if need be."""
    room = max(WHERE_WIDTH - cell_len(head) - len(" ()"), MIN_PLACE_WIDTH)
    return f"{head} ({backend.short_place(room)})"


def refusal(refused: Mapping[str, Sequence[CheckpointRow]]) -> str:
    """'box2 is read-only' or 'box2 and box3 are read-only'."""
    names = list(refused)
    if len(names) == 1:
        return f"{names[0]} is read-only"
    return f"{', '.join(names[:-1])} and {names[-1]} are read-only"


@dataclass(frozen=True)
class Targets:
    """What a change goes to (`rows`), and what read-only backends refuse (`refused`)."""

    rows: list[CheckpointRow]
    refused: dict[str, list[CheckpointRow]] = field(default_factory=dict)
    several: bool = False
    """More than one backend is open: the dialogs name each backend and count per backend."""

    @classmethod
    def split(cls, rows: Sequence[CheckpointRow], connections: Mapping[str, Connection]) -> Targets:
        """`rows` less those on read-only backends, which are refused."""
        refused = refused_rows(rows, {name: c.backend for name, c in connections.items()})
        kept = [row for row in rows if row.backend not in refused]
        return cls(kept, refused, len(connections) > 1)

    def where(self, backends: Mapping[str, Backend]) -> str:
        """'on box1 (http://…)' for one backend; with several open, one line per backend
        the change goes to: 'on box1: 3 checkpoints, 1.2 GiB (http://…)'.

        Each line fits a dialog at 80 columns: the name, count and size always show whole,
        and a long URL or store path is shortened in the middle, so no line wraps into the
        next (a store path can be any length)."""
        groups = group_by_backend(self.rows)
        if not self.several:
            first = next(iter(groups), None)
            return "" if first is None else where_line(f"on {first}", backends[first])
        return "\n".join(
            where_line(
                f"on {name}: {count_of(len(group), 'checkpoint')}, "
                f"{format_total(total(row.size for row in group))}",
                backends[name],
            )
            for name, group in groups.items()
        )

    def warnings(self) -> list[str]:
        """One line per read-only backend: its part is left out."""
        return [
            f"⚠ {name} is read-only: its {count_of(len(group), 'checkpoint')} stay as they are; "
            "confirming changes only the rest"
            for name, group in self.refused.items()
        ]
