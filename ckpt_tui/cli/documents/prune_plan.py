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
from ckpt_tui.policy.rules import Decision, KeepPolicy, Plan, RunPlan
from ckpt_tui.sizes import SizeTotal, format_size, format_total

SCHEMA = "ckpt-tui.prune/1"
DECISION_COLUMNS = ("  ACTION", "CHECKPOINT", "KIND", "STEP", "SIZE", "CREATED", "WHY")


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


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


def plan_lines(plan: Plan, rate: float | None) -> list[str]:
    """Every run's decisions, then the totals."""
    lines = [f"Keep rules: {', '.join(plan.policy.describe()) or 'none'}", ""]
    for run in plan.runs:
        lines.extend(run_lines(run, rate))
    lines.append(
        f"Total: delete {plan.delete_count} of {plural(len(plan.decisions), 'checkpoint')} in "
        f"{plural(len(plan.runs), 'run')}, frees {freed_text(plan.freed, rate)}; "
        f"keeps {plan.kept_count} ({format_total(plan.kept_size) if plan.kept_count else '0'})"
    )
    return lines


def outcome_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """One line per delete, then a summary."""
    lines = [
        f"deleted {o.target}" if o.ok else f"FAILED  {o.target}: {o.message}" for o in outcomes
    ]
    failed = sum(not o.ok for o in outcomes)
    summary = f"Deleted {len(outcomes) - failed} of {plural(len(outcomes), 'checkpoint')}"
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
    if rate is None:
        return None
    cost: MonthlyCost = monthly_cost(size, rate)
    return {
        "usd_per_month": round(cost.usd, 6),
        "at_least": cost.at_least,
        "estimated": cost.estimated,
        "text": format_cost(cost),
    }


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


def write_plan_json(
    out: BinaryIO,
    plan: Plan,
    backend: str,
    rate: float | None,
    outcomes: Sequence[Outcome] | None,
    problems: Sequence[str],
) -> None:
    """Write the whole `prune --json` answer to `out`; `outcomes` is None for a dry run."""
    failed = None if outcomes is None else sum(not o.ok for o in outcomes)
    head = {
        "schema": SCHEMA,
        "backend": backend,
        "generated_at": format_time(plan.made_at),
        "mode": "dry-run" if outcomes is None else "delete",
        "policy": policy_document(plan.policy),
        "storage_rate_usd_per_gib_month": rate,
        "totals": {
            "runs": len(plan.runs),
            "checkpoints": len(plan.decisions),
            "keep": plan.kept_count,
            "delete": plan.delete_count,
            "freed": size_document(plan.freed),
            "kept": size_document(plan.kept_size),
            "monthly_saving": cost_document(plan.freed, rate),
            "deleted": None if outcomes is None else len(outcomes) - (failed or 0),
            "failed": failed,
        },
    }
    tail = {
        "outcomes": None if outcomes is None else [outcome_document(o) for o in outcomes],
        "problems": list(problems),
    }
    write_json(out, head, ("runs", (run_document(run, rate) for run in plan.runs)), tail)
