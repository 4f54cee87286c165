"""The keep-policy preview: every checkpoint of a plan, grouped by run, with its decision.

`PlanPreview` is a virtual list (Textual Line API): it formats only the lines on screen, so a
plan over 100,000 checkpoints scrolls as fast as one over ten. The text helpers are pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ckpt_tui.cost import MonthlyCost, format_cost, monthly_cost
from ckpt_tui.policy import Decision, Plan, RunPlan
from ckpt_tui.sizes import SizeTotal, format_size, format_total, total
from ckpt_tui.tui.widgets.table_layout import fit_text
from ckpt_tui.words import count_of

Entry = RunPlan | Decision
"""One preview line below the header: a run's summary or one checkpoint's decision."""
Rates = Mapping[str, float | None]
"""Each backend's storage rate (USD per GiB-month; None: no cost shown), by name."""

DELETE_STYLE = Style(color="red", bold=True)
KEEP_STYLE = Style(color="green")
RUN_STYLE = Style(bold=True)
HEADER_STYLE = Style(bold=True, underline=True)
INDENT = "  "


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


def decision_text(decision: Decision) -> Text:
    """'delete' in red, or 'keep: final, last 3'."""
    if not decision.keep:
        return Text("delete", style=DELETE_STYLE)
    return Text(f"keep: {', '.join(decision.reasons)}", style=KEEP_STYLE)


def metric_cell(decision: Decision, metric: str | None) -> str:
    value = None if metric is None else decision.row.metrics.get(metric)
    return "" if value is None else f"{value:.4g}"


@dataclass(frozen=True)
class Layout:
    """Column widths for one preview width: name and decision share what the others leave."""

    name: int
    decision: int

    KIND = 7
    STEP = 6
    METRIC = 9
    SIZE = 10
    FIXED = len(INDENT) + KIND + STEP + METRIC + SIZE + 5  # five one-cell gaps

    @classmethod
    def fit(cls, width: int, longest_name: int) -> Layout:
        spare = max(width - cls.FIXED, 12)
        name = min(max(longest_name, len("Checkpoint")), max(spare // 3, 6))
        return cls(name, max(spare - name, 6))


def header_line(layout: Layout, metric: str | None) -> Text:
    cells = [
        INDENT + fit_text("Checkpoint", layout.name, "left"),
        fit_text("Kind", Layout.KIND, "left"),
        fit_text("Step", Layout.STEP, "right"),
        fit_text(metric or "", Layout.METRIC, "right"),
        fit_text("Size", Layout.SIZE, "right"),
        fit_text("Decision", layout.decision, "left"),
    ]
    return Text(" ".join(cells), style=HEADER_STYLE)


def decision_line(decision: Decision, layout: Layout, metric: str | None) -> Text:
    row = decision.row
    cells = [
        INDENT + fit_text(row.name, layout.name, "left"),
        fit_text(row.kind, Layout.KIND, "left"),
        fit_text("" if row.step is None else str(row.step), Layout.STEP, "right"),
        fit_text(metric_cell(decision, metric), Layout.METRIC, "right"),
        fit_text(format_size(row.size, short=True), Layout.SIZE, "right"),
        "",
    ]
    line = Text(" ".join(cells))
    verdict = decision_text(decision)
    verdict.truncate(layout.decision, overflow="ellipsis")
    return line + verdict


def run_line(run: RunPlan, rates: Rates) -> Text:
    """'box1 · sl/llama-8b  delete 12 of 20 · …' (the backend only when several are open)."""
    backend = backend_of(run)
    name = f"{backend} · {run.run_name}" if len(rates) > 1 and backend else run.run_name
    line = Text(name, style=RUN_STYLE)
    line.append(f"  {run_summary(run, rates)}")
    return line


def entries_of(plan: Plan | None) -> list[Entry]:
    """Each run's summary line followed by its decisions."""
    entries: list[Entry] = []
    for run in () if plan is None else plan.runs:
        entries.append(run)
        entries.extend(run.decisions)
    return entries


class PlanPreview(ScrollView, can_focus=True):
    """A scrollable list of a plan's decisions under a fixed column header."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.entries: Sequence[Entry] = ()
        self.metric: str | None = None
        self.rates: Rates = {}
        self.longest_name = 6
        self.message = ""

    def show(self, plan: Plan | None, metric: str | None, rates: Rates) -> None:
        """Show `plan` (None: show `message` instead), with `metric` values in their column."""
        self.entries = entries_of(plan)
        self.metric, self.rates = metric, rates
        names = (len(d.row.name) for run in (plan.runs if plan else ()) for d in run.decisions)
        self.longest_name = max(names, default=6)
        self.virtual_size = Size(0, len(self.entries) + 1)
        self.refresh()

    def line_text(self, y: int, width: int) -> Text:
        """The text of screen line `y` (0 is the header) at `width` cells."""
        layout = Layout.fit(width, self.longest_name)
        if y == 0:
            return header_line(layout, self.metric)
        if not self.entries:
            return Text(self.message if y == 2 else "", style="italic")
        index = y - 1 + round(self.scroll_y)
        if index >= len(self.entries):
            return Text("")
        entry = self.entries[index]
        if isinstance(entry, RunPlan):
            return run_line(entry, self.rates)
        return decision_line(entry, layout, self.metric)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        text = self.line_text(y, width)
        text.truncate(width, overflow="ellipsis")
        strip = Strip(list(text.render(self.app.console)))
        return strip.extend_cell_length(width).apply_style(self.rich_style)

    def all_lines(self, width: int) -> list[str]:
        """Every line as plain text (the header first), as if the list were not scrolled."""
        layout = Layout.fit(width, self.longest_name)
        lines = [header_line(layout, self.metric).plain]
        for entry in self.entries:
            if isinstance(entry, RunPlan):
                lines.append(run_line(entry, self.rates).plain)
            else:
                lines.append(decision_line(entry, layout, self.metric).plain)
        return lines
