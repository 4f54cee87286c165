"""The details pane: everything known about the highlighted checkpoint, and its loss curve."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.widgets import Static

from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.logdirs import Metrics
from ckpt_tui.sizes import format_size
from ckpt_tui.sparkline import pick_series, sparkline
from ckpt_tui.ttl import describe_expiry, format_exact
from ckpt_tui.tui.render import format_created

CURVE_WIDTH = 60


def size_line(row: CheckpointRow) -> str:
    if row.is_missing:
        return "not stored (deleted or expired on the server)"
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


def field_pairs(row: CheckpointRow) -> list[tuple[str, str]]:
    """The record's fields and extra keys, then user metadata, each group on one line."""
    pairs = []
    if row.record is not None:
        pairs.append(("Record", "  ".join(f"{k}={v}" for k, v in row.record.to_dict().items())))
    metadata = row.server.user_metadata if row.server else None
    if metadata:
        pairs.append(("Metadata", "  ".join(f"{k}={v}" for k, v in metadata.items())))
    return pairs


def details_text(
    row: CheckpointRow | None, run: RunSummary | None, now: datetime, metrics: Metrics | None
) -> Text:
    """The pane's contents; user text is appended as plain text, never parsed as markup."""
    if row is None:
        return Text("No checkpoint highlighted.", style="dim")
    text = Text()
    text.append(row.tinker_path, style="bold")
    others = [word for word in row.flags() if word != row.state.value]
    flags = " · ".join([row.kind, row.state.value, *others])
    text.append(f"\n{row.run_name} · {flags}")
    lines = [
        ("Size", size_line(row)),
        ("Created", time_line(row.created, now, "unknown")),
        ("Expires", "-" if row.is_missing else time_line(row.expires_at, now, "never")),
    ]
    if run is not None:
        rank = f", LoRA rank {run.lora_rank}" if run.lora_rank else ""
        lines.insert(0, ("Model", f"{run.base_model}{rank}"))
    append_lines(text, lines)
    append_curve(text, row, metrics)
    append_lines(text, field_pairs(row))
    return text


def append_lines(text: Text, lines: list[tuple[str, str]]) -> None:
    for label, value in lines:
        text.append(f"\n{label:>9} ", style="dim")
        text.append(value)


def append_curve(text: Text, row: CheckpointRow, metrics: Metrics | None) -> None:
    if metrics is None:
        return
    key = pick_series(metrics.series)
    if key is None:
        return
    line = sparkline(metrics.series[key], CURVE_WIDTH, row.step)
    text.append(f"\n{key[:9]:>9} ", style="dim")
    for index, char in enumerate(line.text):
        text.append(char, style="reverse bold" if index == line.marker else "")
    text.append(f"  {line.high:.3g} → {line.low:.3g}", style="dim")
    where = f"step {row.step} marked" if line.marker is not None else "step not in the log"
    text.append(f"\n{'':>9} steps {line.first_step}–{line.last_step}, {where}", style="dim")


class DetailsPane(Static):
    """Shows `details_text` for the highlighted checkpoint."""

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
        self.update(details_text(row, run, now, metrics))
