"""The details pane: everything known about the highlighted checkpoint, and its loss curve."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.sizes import format_size
from ckpt_tui.timekeeping.ttl import describe_expiry, format_created, format_exact
from ckpt_tui.training.logdirs import Metrics
from ckpt_tui.tui.view.sparkline import pick_series, sparkline

CURVE_WIDTH = 60


def size_line(row: CheckpointRow) -> str:
    if row.is_missing:
        return "not stored (deleted or expired on the server)"
    if row.size.kind == "partial":
        return format_size(row.size)
    basis = {"exact": "exact, as the server reports it", "estimate": "estimate"}.get(
        row.size.kind, "unknown"
    )
    reason = f": {row.size.basis}" if row.size.basis else ""
    return f"{format_size(row.size)} ({basis}{reason})"


def time_line(moment: datetime | None, now: datetime, never: str) -> str:
    if moment is None:
        return never
    relative = describe_expiry(moment, now) if moment > now else format_created(moment, now)
    return f"{format_exact(moment)} ({relative})"


PATH_KEYS = ("state_path", "sampler_path")


def field_pairs(row: CheckpointRow) -> list[tuple[str, Text]]:
    """The record's fields (its other checkpoint apart), then user metadata."""
    pairs: list[tuple[str, Text]] = []
    if row.record is not None:
        fields = row.record.to_dict()
        plain = "  ".join(f"{k}={v}" for k, v in fields.items() if k not in PATH_KEYS)
        pairs.append(("Record", Text(plain)))
        sibling = [
            str(fields[k]) for k in PATH_KEYS if k in fields and fields[k] != row.tinker_path
        ]
        if sibling:
            pairs.append(("Saved with", Text(sibling[0])))
    metadata = row.server.user_metadata if row.server else None
    if metadata:
        pairs.append(("Metadata", Text("  ".join(f"{k}={v}" for k, v in metadata.items()))))
    return pairs


def curve_text(row: CheckpointRow, metrics: Metrics | None) -> Text | None:
    """The loss curve with this checkpoint's step in reverse video, and its range."""
    key = None if metrics is None else pick_series(metrics.series)
    if metrics is None or key is None:
        return None
    line = sparkline(metrics.series[key], CURVE_WIDTH, row.step)
    text = Text()
    for index, char in enumerate(line.text):
        text.append(char, style="reverse bold" if index == line.marker else "")
    text.append(f"  {key} {line.high:.3g} → {line.low:.3g}", style="dim")
    # "highlighted", not "marked": marking is what space does to rows
    where = f"step {row.step} highlighted" if line.marker is not None else "step not in the log"
    text.append(f"\nsteps {line.first_step}–{line.last_step}, {where}", style="dim")
    return text


def details_renderable(
    row: CheckpointRow | None, run: RunSummary | None, now: datetime, metrics: Metrics | None
) -> RenderableType:
    """The pane's contents; user text is plain Text, never parsed as markup.

    Labels sit in their own column, so long values (paths, metadata) wrap under the value.
    """
    if row is None:
        return Text("No checkpoint highlighted.", style="dim")
    others = [word for word in row.flags() if word != row.state.value]
    model = f" · {run.base_model}" + (f" r{run.lora_rank}" if run.lora_rank else "") if run else ""
    heading = Text(row.tinker_path, style="bold")
    heading.append(f"\n{row.run_name}{model} · " + " · ".join([row.kind, row.state.value, *others]))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="dim", no_wrap=True, justify="right")
    grid.add_column(overflow="fold")
    grid.add_row("Size", Text(size_line(row)))
    created = time_line(row.created, now, "unknown")
    expires = "-" if row.is_missing else time_line(row.expires_at, now, "never")
    grid.add_row("Created", Text(f"{created} · expires {expires}"))
    curve = curve_text(row, metrics)
    if curve is not None:
        grid.add_row("Loss", curve)
    for label, value in field_pairs(row):
        grid.add_row(label, value)
    return Group(heading, grid)


class DetailsPane(Static):
    """Shows `details_renderable` for the highlighted checkpoint."""

    shown: tuple[object, ...] | None = None

    def show(
        self,
        row: CheckpointRow | None,
        run: RunSummary | None,
        now: datetime,
        metrics: Metrics | None,
    ) -> None:
        shown = (row, run, now, metrics)
        if self.shown is not None and all(a is b for a, b in zip(shown, self.shown, strict=True)):
            return  # a filter or sort key press that kept the same row: no work, no layout
        self.shown = shown
        self.update(details_renderable(row, run, now, metrics))
