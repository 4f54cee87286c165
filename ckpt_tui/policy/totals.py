"""A keep policy's plan in words: what it deletes, frees and saves, per run, per backend and
in total (the keep-policy dialog's summary lines). Pure text, no Textual."""

from __future__ import annotations

from collections.abc import Mapping

from ckpt_tui.cost import MonthlyCost, format_cost, monthly_cost
from ckpt_tui.policy.rules import Plan, RunPlan
from ckpt_tui.sizes import SizeTotal, format_total, total
from ckpt_tui.words import count_of

Rates = Mapping[str, float | None]
"""Each backend's storage rate (USD per GiB-month; None: no cost shown), by name."""


def size_text(size: SizeTotal) -> str:
    """'10.5 GiB', or 'nothing' for an empty total."""
    return format_total(size) if size.part_count else "nothing"


def saving_text(size: SizeTotal, rate: float | None) -> str:
    """' · saves $1.05/mo' with a rate, else ''."""
    if rate is None:
        return ""
    return f" · saves {format_cost(monthly_cost(size, rate))}"


def backend_of(run: RunPlan) -> str:
    return run.decisions[0].row.backend if run.decisions else ""


def run_summary(run: RunPlan, rates: Rates) -> str:
    """'delete 12 of 20 · frees 8.1 GiB · saves $1.62/mo' (at the run's backend's rate)."""
    freed = run.freed
    return (
        f"delete {len(run.deleted):,} of {len(run.decisions):,} · frees {size_text(freed)}"
        f"{saving_text(freed, rates.get(backend_of(run)))}"
    )


def total_summary(plan: Plan, rates: Rates) -> str:
    """'Total: delete 16 of 20 in 1 run · frees 10.5 GiB · saves $1.05/mo · keeps 4 (2.6 GiB)';
    with runs of several backends, then one line per backend."""
    freed = plan.freed
    backends = by_backend(plan)
    text = (
        f"Total: delete {plan.delete_count:,} of {len(plan.decisions):,} in "
        f"{count_of(len(plan.runs), 'run')} · frees {size_text(freed)}"
        f"{saving_of(backends, rates)} · keeps {plan.kept_count:,} ({size_text(plan.kept_size)})"
    )
    if len(backends) > 1:
        for name, runs in backends.items():
            deleted = [d for run in runs for d in run.deleted]
            size = total(d.row.size for d in deleted)
            text += (
                f"\n  {name}: delete {len(deleted):,} of "
                f"{sum(len(run.decisions) for run in runs):,} in {count_of(len(runs), 'run')} · "
                f"frees {size_text(size)}{saving_text(size, rates.get(name))}"
            )
    return text


def by_backend(plan: Plan) -> dict[str, list[RunPlan]]:
    groups: dict[str, list[RunPlan]] = {}
    for run in plan.runs:
        groups.setdefault(backend_of(run), []).append(run)
    return groups


def saving_of(backends: Mapping[str, list[RunPlan]], rates: Rates) -> str:
    """What deleting saves over all backends, each at its own rate ('at least' when a backend
    without a rate frees something too); '' when no backend has a rate."""
    costs, unpriced = [], False
    for name, runs in backends.items():
        size = total(d.row.size for run in runs for d in run.deleted)
        rate = rates.get(name)
        if rate is None:
            unpriced = unpriced or size.part_count > 0
        else:
            costs.append(monthly_cost(size, rate))
    if not costs:
        return ""
    cost = MonthlyCost(
        sum(c.usd for c in costs),
        at_least=unpriced or any(c.at_least for c in costs),
        estimated=any(c.estimated for c in costs),
    )
    return f" · saves {format_cost(cost)}"
