"""A keep policy over several backends: one plan per backend, per run, as on one backend.

A backend whose list is not whole (it failed, or its lists are partial) is not planned: a
policy on a partial list would delete what it cannot see is needed. A read-only backend is
planned (so its plan can be shown) but its deletions are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec
from msgspec.structs import replace

from ckpt_tui.backends import Backend, BackendState, Fleet
from ckpt_tui.backends.refusals import refused_rows
from ckpt_tui.client import Outcome
from ckpt_tui.policy.rules import KeepPolicy, Plan, PolicyError, plan


class Part(msgspec.Struct, frozen=True):
    """One backend's share of a prune."""

    state: BackendState
    plan: Plan | None
    """None: not planned, see `not_planned`."""
    outcomes: tuple[Outcome, ...] | None = None
    """What its deletions did (None until carried out)."""

    @property
    def backend(self) -> Backend:
        return self.state.backend

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def not_planned(self) -> str:
        """Why it was not planned ("" when it was)."""
        return "" if self.plan is not None else self.state.incomplete

    @property
    def delete_count(self) -> int:
        return 0 if self.plan is None else self.plan.delete_count

    @property
    def refused(self) -> str:
        """Why its deletions are refused ("" when they are not): a read-only backend."""
        if self.plan is None or not refused_rows(self.plan.to_delete, {self.name: self.backend}):
            return ""
        return (
            f"{self.name} is read-only: nothing is deleted there "
            f"({self.delete_count} planned, refused)"
        )

    def done(self, outcomes: Sequence[Outcome]) -> Part:
        return replace(self, outcomes=tuple(outcomes))


def plan_fleet(
    fleet: Fleet, policy: KeepPolicy, wanted: Sequence[str], now: datetime
) -> list[Part]:
    """Each whole backend's plan over its chosen runs; PolicyError when `wanted` names a run
    no backend has, or the policy ranks by a metric no chosen checkpoint has."""
    runs = fleet.choose_runs(wanted)
    if runs is None:
        known = ", ".join(run.display_name for run in fleet.runs()) or "none"
        raise PolicyError(f"no run matches {', '.join(wanted)}; known runs: {known}")
    metric = policy.metric
    stored = [row for run in runs for row in run.stored_rows]
    if metric is not None and not any(metric in row.metrics for row in stored):
        found = sorted({key for row in stored for key in row.metrics})
        raise PolicyError(
            f"no checkpoint has metric {metric!r}; metrics found: {', '.join(found) or 'none'}"
        )
    parts = []
    for state in fleet.states:
        if not state.complete:
            parts.append(Part(state, None))
            continue
        rows = [row for run in runs if run.backend == state.name for row in run.stored_rows]
        parts.append(Part(state, plan(rows, policy, now)))
    return parts
