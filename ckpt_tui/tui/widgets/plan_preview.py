"""The keep-policy preview: every checkpoint of a plan, grouped by run, with its decision.

`PlanPreview` is a virtual list (Textual Line API): it formats only the lines on screen, so a
plan over 100,000 checkpoints scrolls as fast as one over ten. Its summary lines are
`ckpt_tui.policy.totals`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ckpt_tui.policy import Decision, Plan, RunPlan
from ckpt_tui.policy.totals import Rates, backend_of, run_summary
from ckpt_tui.sizes import format_size
from ckpt_tui.tui.widgets.table_layout import fit_text

Entry = RunPlan | Decision
"""One preview line below the header: a run's summary or one checkpoint's decision."""
DELETE_STYLE = Style(color="red", bold=True)
KEEP_STYLE = Style(color="green")
RUN_STYLE = Style(bold=True)
HEADER_STYLE = Style(bold=True, underline=True)
INDENT = "  "


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
