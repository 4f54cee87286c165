"""Carrying out a keep policy's plans: each backend's deletions through its own client.

`ckpt-tui prune` carries out its plans here; the TUI's keep policy runs the same
`FleetAction` (split by owner, every backend side by side, one summary wording) once the
delete dialog has confirmed it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ckpt_tui.actions.fleet_action import FleetAction, FleetProgress
from ckpt_tui.client import CheckpointClient
from ckpt_tui.policy.fleet_plan import Part

LABEL = "prune"


def deletions(parts: Sequence[Part]) -> FleetAction:
    """The planned deletions of every part that may act (planned, not refused)."""
    rows = [
        row
        for part in parts
        if part.plan is not None and not part.refused
        for row in part.plan.to_delete
    ]
    return FleetAction.of("delete", rows, LABEL)


async def carry_out(
    parts: Sequence[Part],
    client_of: Callable[[str], CheckpointClient],
    on_progress: FleetProgress | None = None,
) -> list[Part]:
    """Delete every part's planned rows through its own backend's client, all backends side by
    side; each part that may act comes back with its outcomes (none for an empty plan), the
    others (refused, not planned) as they were. Never raises half-way."""
    action = deletions(parts)
    await action.run(client_of, on_progress or (lambda _name, _outcome: None))
    done: list[Part] = []
    for part in parts:
        if part.plan is None or part.refused:
            done.append(part)
            continue
        acted = action.parts.get(part.name)
        done.append(part.done(acted.outcomes if acted is not None else []))
    return done
