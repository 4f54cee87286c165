"""A plan for people (aligned text) and for scripts (one JSON document, `ckpt-tui.prune/1`).

The JSON schema is described in the README; change it only with a new schema version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, BinaryIO

import msgspec

from ckpt_tui.api_types import format_time
from ckpt_tui.cli.documents.listing import aligned, opt_time, write_json
from ckpt_tui.client import Outcome
from ckpt_tui.cost import MonthlyCost, format_cost, monthly_cost
from ckpt_tui.policy.fleet_plan import Part
from ckpt_tui.policy.rules import Decision, KeepPolicy, Plan, RunPlan
from ckpt_tui.sizes import SizeTotal, format_size, format_total, sum_totals
from ckpt_tui.words import count_of

SCHEMA = "ckpt-tui.prune/1"
DECISION_COLUMNS = ("  ACTION", "CHECKPOINT", "KIND", "STEP", "SIZE", "CREATED", "WHY")


def short_time(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M")


def freed_text(size: SizeTotal, rate: float | None) -> str:
    """'1.2 GiB' or, with a rate, '1.2 GiB ($0.12/mo)'."""
    text = format_total(size) if size.part_count else "0 Bytes"
    if rate is None:
        return text
    return f"{text} ({format_cost(monthly_cost(size, rate))})"


def decision_cells(decision: Decision) -> list[str]:
    row = decision.row
    return [
        "  keep" if decision.keep else "  DELETE",
        row.checkpoint_id,
        row.kind,
        "" if row.step is None else str(row.step),
        format_size(row.size),
        short_time(row.created),
        ", ".join(decision.reasons),
    ]


def run_lines(run: RunPlan, rate: float | None) -> list[str]:
    header = (
        f"{run.run_name}: delete {len(run.deleted)} of {len(run.decisions)}, "
        f"frees {freed_text(run.freed, rate)}"
    )
    if run.run_name != run.run_id:
        header += f"  [{run.run_id}]"
    cells = [decision_cells(d) for d in run.decisions]
    return [header, *aligned([list(DECISION_COLUMNS), *cells]), ""]


def rules_line(policy: KeepPolicy) -> str:
    return f"Keep rules: {', '.join(policy.describe()) or 'none'}"


def plan_lines(plan: Plan, rate: float | None) -> list[str]:
    """Every run's decisions, then the totals."""
    lines = [rules_line(plan.policy), ""]
    for run in plan.runs:
        lines.extend(run_lines(run, rate))
    lines.append(f"Total: {total_text(plan, rate)}")
    return lines


def total_text(plan: Plan, rate: float | None) -> str:
    return (
        f"delete {plan.delete_count} of {count_of(len(plan.decisions), 'checkpoint')} in "
        f"{count_of(len(plan.runs), 'run')}, frees {freed_text(plan.freed, rate)}; "
        f"keeps {plan.kept_count} ({format_total(plan.kept_size) if plan.kept_count else '0'})"
    )


def fleet_plan_lines(
    parts: Sequence[Part], policy: KeepPolicy, described: Mapping[str, str]
) -> list[str]:
    """With several backends: each one's plan under its heading, then the totals of all."""
    lines = [rules_line(policy), ""]
    for part in parts:
        heading = f"== {part.name}: {described[part.name]}"
        if part.plan is None:
            lines += [f"{heading}: NOT PLANNED ==", f"  {part.not_planned}", ""]
            continue
        lines.append(f"{heading} ==")
        for run in part.plan.runs:
            lines.extend(run_lines(run, part.state.rate))
        lines += [f"Total on {part.name}: {total_text(part.plan, part.state.rate)}", ""]
    plans = [part.plan for part in parts if part.plan is not None]
    deletes = sum(plan.delete_count for plan in plans)
    checkpoints = sum(len(plan.decisions) for plan in plans)
    freed = sum_totals(plan.freed for plan in plans)
    saving = combined_cost([(p.plan.freed, p.state.rate) for p in parts if p.plan is not None])
    cost = "" if saving is None else f" ({format_cost(saving)})"
    freed_words = freed_text(freed, None)
    lines.append(
        f"Total: delete {deletes} of {count_of(checkpoints, 'checkpoint')} on "
        f"{count_of(len(plans), 'backend')}, frees {freed_words}{cost}"
    )
    return lines


def combined_cost(parts: Sequence[tuple[SizeTotal, float | None]]) -> MonthlyCost | None:
    """What sizes cost at their own rates together; "at least" when one with bytes has no
    rate; None when none has a rate."""
    costs = [monthly_cost(size, rate) for size, rate in parts if rate is not None]
    if not costs:
        return None
    unpriced = any(rate is None and size.part_count for size, rate in parts)
    return MonthlyCost(
        sum(cost.usd for cost in costs),
        at_least=unpriced or any(cost.at_least for cost in costs),
        estimated=any(cost.estimated for cost in costs),
    )


def outcome_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """One line per delete, then a summary."""
    lines = [
        f"deleted {o.target}" if o.ok else f"FAILED  {o.target}: {o.message}" for o in outcomes
    ]
    failed = sum(not o.ok for o in outcomes)
    summary = f"Deleted {len(outcomes) - failed} of {count_of(len(outcomes), 'checkpoint')}"
    return [*lines, summary + (f"; {failed} failed." if failed else ".")]


def size_document(size: SizeTotal) -> dict[str, Any]:
    return {
        "bytes": size.bytes,
        "is_exact": size.is_exact,
        "estimate_count": size.estimate_count,
        "unknown_count": size.unknown_count,
        "text": format_total(size) if size.part_count else "0 Bytes",
    }


def cost_document(size: SizeTotal, rate: float | None) -> dict[str, Any] | None:
    return None if rate is None else saving_document(monthly_cost(size, rate))


def policy_document(policy: KeepPolicy) -> dict[str, Any]:
    return {
        "keep_final": policy.keep_final,
        "keep_flagged_best": policy.keep_flagged_best,
        "keep_resume_point": policy.keep_resume_point,
        "keep_published": policy.keep_published,
        "keep_best": policy.keep_best,
        "metric": policy.metric,
        "higher_is_better": policy.higher_is_better,
        "keep_last": policy.keep_last,
        "keep_every": policy.keep_every,
        "keep_expiring_after": opt_time(policy.keep_expiring_after),
        "rules": policy.describe(),
    }


class DecisionDocument(msgspec.Struct, gc=False):
    """One checkpoint's decision in `prune --json` (fields in document order)."""

    tinker_path: str
    checkpoint_id: str
    kind: str
    state: str
    step: int | None
    metrics: Mapping[str, float]
    size_bytes: int | None
    size_kind: str
    created: datetime | None
    expires_at: datetime | None
    keep: bool
    reasons: list[str]


def decision_document(decision: Decision) -> DecisionDocument:
    row = decision.row
    return DecisionDocument(
        row.tinker_path,
        row.checkpoint_id,
        row.kind,
        row.state.value,
        row.step,
        row.metrics,
        row.size.bytes,
        row.size.kind,
        row.created,
        row.expires_at,
        decision.keep,
        list(decision.reasons),
    )


def run_document(run: RunPlan, rate: float | None) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "display_name": run.run_name,
        "keep": len(run.kept),
        "delete": len(run.deleted),
        "freed": size_document(run.freed),
        "monthly_saving": cost_document(run.freed, rate),
        "decisions": [decision_document(d) for d in run.decisions],
    }


def outcome_document(outcome: Outcome) -> dict[str, Any]:
    return {
        "tinker_path": outcome.target,
        "ok": outcome.ok,
        "status": outcome.status,
        "message": outcome.message or None,
    }


def saving_document(cost: MonthlyCost | None) -> dict[str, Any] | None:
    if cost is None:
        return None
    return {
        "usd_per_month": round(cost.usd, 6),
        "at_least": cost.at_least,
        "estimated": cost.estimated,
        "text": format_cost(cost),
    }


def plan_totals(
    plans: Sequence[tuple[Plan, float | None]], outcomes: Sequence[Outcome] | None
) -> dict[str, Any]:
    """Counts, sizes and saving of some plans (each at its backend's rate)."""
    failed = None if outcomes is None else sum(not o.ok for o in outcomes)
    return {
        "runs": sum(len(plan.runs) for plan, _ in plans),
        "checkpoints": sum(len(plan.decisions) for plan, _ in plans),
        "keep": sum(plan.kept_count for plan, _ in plans),
        "delete": sum(plan.delete_count for plan, _ in plans),
        "freed": size_document(sum_totals(plan.freed for plan, _ in plans)),
        "kept": size_document(sum_totals(plan.kept_size for plan, _ in plans)),
        "monthly_saving": saving_document(combined_cost([(p.freed, r) for p, r in plans])),
        "deleted": None if outcomes is None else len(outcomes) - (failed or 0),
        "failed": failed,
    }


def part_document(part: Part, described: str, executed: bool) -> dict[str, Any]:
    plans = [] if part.plan is None else [(part.plan, part.state.rate)]
    outcomes = part.outcomes if executed else None
    if executed and outcomes is None:
        outcomes = ()  # refused or not planned: nothing was sent
    return {
        **part.backend.document(),
        "described": described,
        "readonly": part.backend.readonly,
        "complete": part.state.complete,
        "error": part.state.error,
        "planned": part.plan is not None,
        "not_planned": part.not_planned or None,
        "refused": part.refused or None,
        "storage_rate_usd_per_gib_month": part.state.rate,
        "rate_source": part.state.rate_source,
        "totals": plan_totals(plans, outcomes),
    }


def write_plan_json(
    out: BinaryIO,
    parts: Sequence[Part],
    described: Mapping[str, str],
    policy: KeepPolicy,
    made_at: datetime,
    executed: bool,
    problems: Sequence[str],
) -> None:
    """Write the whole `prune --json` answer to `out`: every backend's part and plan, the
    totals of all, and (after --yes) every delete's outcome, naming its backend."""
    rates = {part.state.rate for part in parts}
    plans = [(part.plan, part.state.rate) for part in parts if part.plan is not None]
    outcomes = [o for part in parts for o in part.outcomes or ()] if executed else None
    head = {
        "schema": SCHEMA,
        "backend": "; ".join(described[part.name] for part in parts),
        "generated_at": format_time(made_at),
        "mode": "delete" if executed else "dry-run",
        "policy": policy_document(policy),
        "storage_rate_usd_per_gib_month": rates.pop() if len(rates) == 1 else None,
        "totals": plan_totals(plans, outcomes),
        "backends": [part_document(part, described[part.name], executed) for part in parts],
    }
    runs = (
        {"backend": part.backend.document(), **run_document(run, part.state.rate)}
        for part in parts
        if part.plan is not None
        for run in part.plan.runs
    )
    tail = {
        "outcomes": None
        if outcomes is None
        else [
            {"backend": part.name, **outcome_document(o)}
            for part in parts
            for o in part.outcomes or ()
        ],
        "problems": list(problems),
    }
    write_json(out, head, ("runs", runs), tail)
