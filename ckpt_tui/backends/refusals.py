"""Which backends refuse a change: one rule for the TUI's changes (`actions.owners.Targets`)
and for `prune`'s plan (`policy.fleet_plan.Part`): a read-only backend refuses every change
to its checkpoints (its own setting, or --readonly for all)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ckpt_tui.backends.descriptor import Backend
from ckpt_tui.catalog import CheckpointRow


def group_by_backend(rows: Sequence[CheckpointRow]) -> dict[str, list[CheckpointRow]]:
    """`rows` by backend name, each group in the rows' order, backends as first met."""
    groups: dict[str, list[CheckpointRow]] = {}
    for row in rows:
        groups.setdefault(row.backend, []).append(row)
    return groups


def refused_rows(
    rows: Sequence[CheckpointRow], backends: Mapping[str, Backend]
) -> dict[str, list[CheckpointRow]]:
    """Those of `rows` whose backend (named in `backends`) is read-only, by backend name."""
    return {
        name: group
        for name, group in group_by_backend(rows).items()
        if (backend := backends.get(name)) is not None and backend.readonly
    }
