"""The header line (what the backend holds) and the status line (what the user is doing)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text

from ckpt_tui.catalog import Catalog, stored_only
from ckpt_tui.cost import format_cost, monthly_cost
from ckpt_tui.sizes import SizeTotal, format_total, total
from ckpt_tui.ttl import describe_expiry

if TYPE_CHECKING:
    from ckpt_tui.tui.screens.browse import BrowseScreen


def with_cost(size: SizeTotal, rate: float | None) -> str:
    """'146.2 GiB', or with a storage rate '146.2 GiB ($14.62/mo)'."""
    text = format_total(size)
    return text if rate is None else f"{text} ({format_cost(monthly_cost(size, rate))})"


def header_text(
    backend: str,
    catalog: Catalog | None,
    now: datetime,
    rate: float | None = None,
    width: int | None = None,
    short_backend: str | None = None,
    readonly: bool = False,
) -> Text:
    """'ckpt-tui  6 runs · 47 checkpoints · 146.2 GiB · next expiry in 2 hours  │  BACKEND'.

    With a storage `rate` (USD per GiB-month) the size says what it costs per month. In a
    narrow `width` the backend stays (as `short_backend` if need be, cut from the left at
    worst): the totals give way first, from the end. Read-only mode says so right after the
    name, where no width cuts it.
    """
    parts = [] if catalog is None else total_parts(catalog, now, rate)
    short = short_backend or backend
    room = width if width is not None else 10**6
    # The full name while runs and checkpoints still fit beside it, then the short one.
    tries = [(backend, n) for n in range(len(parts), 1, -1)]
    tries += [(short, n) for n in range(len(parts), -1, -1)]
    for name, count in tries:
        line = header_line(parts[:count], name, readonly)
        if line.cell_len <= room:
            return line
    keep = room - header_line([], "", readonly).cell_len - 1
    return header_line([], "…" + short[-keep:] if keep > 0 else "", readonly)


def total_parts(catalog: Catalog, now: datetime, rate: float | None) -> list[str]:
    soonest = catalog.soonest_expiry  # cached per catalog: this runs on every key press
    return [
        f"{len(catalog.runs):,} runs",
        f"{len(catalog.stored_rows):,} checkpoints",
        with_cost(catalog.stored_size, rate),
        f"next expiry {describe_expiry(soonest, now)}" if soonest else "nothing expires",
    ]


def header_line(parts: list[str], backend: str, readonly: bool = False) -> Text:
    text = Text()
    text.append("ckpt-tui", style="bold")
    if readonly:
        text.append(" ")
        text.append(" READ-ONLY ", style="bold reverse")
    if parts:
        text.append("  " + " · ".join(parts))
    text.append(f"  │  {backend}", style="dim")
    return text


def marked_text(screen: BrowseScreen) -> str:
    catalog = screen.catalog
    marks = screen.checkpoints_table.marks
    if not marks or catalog is None:
        return ""
    marked = [catalog.row_by_path[key] for key in marks if key in catalog.row_by_path]
    rows = stored_only(marked)
    size = total(row.size for row in rows)
    rate = screen.ckpt_app.storage_rate
    text = f"{len(rows):,} marked · {format_total(size)}"
    if rate is not None:
        text += f" · {format_cost(monthly_cost(size, rate))}"
    skipped = len(marked) - len(rows)
    return text + (f" (+{skipped} not stored, skipped)" if skipped else "")


def status_text(screen: BrowseScreen, now: datetime) -> Text:
    """View and sort on the left; marks, loading progress and errors on the right."""
    text = Text(screen.state.describe())
    if screen.view_counts:
        text.append(" · ")
        text.append(screen.view_counts, style="bold")
    extras = []
    if screen.fetching:
        loaded = screen.progress
        count = f"{loaded[0]:,} of {loaded[1]:,}" if loaded else ""
        if not screen.refreshing:
            extras.append(f"{count} loaded" if count else "Loading…")
        else:
            extras.append(f"Refreshing {count}" if count else "Refreshing…")
    bulk = getattr(screen, "bulk_progress", "")
    if bulk:
        extras.append(bulk)
    marked = marked_text(screen)
    if marked:
        extras.append(marked)
    snapshot = screen.snapshot
    if snapshot and snapshot.catalog.runs and not snapshot.discovery.log_dirs and not screen.error:
        extras.append(screen.ckpt_app.log_settings.nothing_found())
    if screen.dropped_marks is not None:
        extras.append(screen.dropped_marks[0])
    if screen.new_above:
        extras.append(f"{len(screen.new_above):,} new above")
    for extra in extras:
        text.append("  │  ")
        text.append(extra, style="bold")
    snapshot = screen.snapshot
    if snapshot is not None and snapshot.incomplete and not screen.fetching:
        text.append("  │  ")
        text.append("Incomplete list: some checkpoints may not be shown", style="bold yellow")
    if screen.error:
        text.append("  │  ")
        text.append(f"Backend error (r retries): {screen.error}", style="bold red")
    return text
