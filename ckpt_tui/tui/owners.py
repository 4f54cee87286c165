"""Which backend owns what a change is asked for, and which backends refuse their part.

No Textual: the screen splits its targets here, and the dialogs show the groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ckpt_tui.backends import Connection
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.sizes import format_total, total
from ckpt_tui.words import count_of


def group_by_backend(rows: Sequence[CheckpointRow]) -> dict[str, list[CheckpointRow]]:
    """`rows` by backend name, each group in the rows' order, backends as first met."""
    groups: dict[str, list[CheckpointRow]] = {}
    for row in rows:
        groups.setdefault(row.backend, []).append(row)
    return groups


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
        readonly = {name for name, c in connections.items() if c.backend.readonly}
        refused = {n: g for n, g in group_by_backend(rows).items() if n in readonly}
        kept = [row for row in rows if row.backend not in readonly]
        return cls(kept, refused, len(connections) > 1)

    def where(self, describe: Callable[[str], str]) -> str:
        """'on box1 (http://…)' for one backend; with several open, one line per backend
        the change goes to: 'on box1 (http://…): 3 checkpoints, 1.2 GiB'."""
        groups = group_by_backend(self.rows)
        if not self.several:
            return f"on {describe(next(iter(groups)))}" if groups else ""
        return "\n".join(
            f"on {describe(name)}: {count_of(len(group), 'checkpoint')}, "
            f"{format_total(total(row.size for row in group))}"
            for name, group in groups.items()
        )

    def warnings(self) -> list[str]:
        """One line per read-only backend: its part is left out."""
        return [
            f"⚠ {name} is read-only: its {count_of(len(group), 'checkpoint')} stay as they are; "
            "confirming changes only the rest"
            for name, group in self.refused.items()
        ]
