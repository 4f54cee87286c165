"""The header line (what the backend holds) and the status line (what the user is doing)."""

from __future__ import annotations

from collections.abc import Hashable, Set
from dataclasses import dataclass
from datetime import datetime

from rich.text import Text

from ckpt_tui.catalog import Catalog, stored_only
from ckpt_tui.cost import format_cost, monthly_cost
from ckpt_tui.sizes import SizeTotal, format_total, total
from ckpt_tui.ttl import describe_expiry


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


def marked_text(catalog: Catalog | None, marks: Set[Hashable], rate: float | None) -> str:
    """'3 marked · 12.0 GiB', with the monthly cost at a storage `rate`."""
    if not marks or catalog is None:
        return ""
    marked = [catalog.row_by_path[key] for key in marks if key in catalog.row_by_path]
    rows = stored_only(marked)
    size = total(row.size for row in rows)
    text = f"{len(rows):,} marked · {format_total(size)}"
    if rate is not None:
        text += f" · {format_cost(monthly_cost(size, rate))}"
    skipped = len(marked) - len(rows)
    return text + (f" (+{skipped} not stored, skipped)" if skipped else "")


@dataclass(frozen=True)
class StatusFacts:
    """Everything the status line says, as plain values (the screen keeps them current)."""

    browsing: str = ""
    """The view, sort and filter: `BrowseState.describe()`."""
    view_counts: str = ""
    fetching: bool = False
    refreshing: bool = False
    progress: tuple[int, int] | None = None
    bulk_progress: str = ""
    marked: str = ""
    no_log_dirs: str = ""
    """Why no training logs are shown, when runs are listed but none of their logs was found."""
    dropped_marks: str = ""
    new_above: int = 0
    incomplete: bool = False
    error: str | None = None


def loading_text(facts: StatusFacts) -> str:
    """'1,000 of 5,000 loaded' while the first load fills in, 'Refreshing…' over a view."""
    if not facts.fetching:
        return ""
    loaded = facts.progress
    count = f"{loaded[0]:,} of {loaded[1]:,}" if loaded else ""
    if not facts.refreshing:
        return f"{count} loaded" if count else "Loading…"
    return f"Refreshing {count}" if count else "Refreshing…"


def status_text(facts: StatusFacts) -> Text:
    """View and sort on the left; marks, loading progress and errors on the right."""
    text = Text(facts.browsing)
    if facts.view_counts:
        text.append(" · ")
        text.append(facts.view_counts, style="bold")
    new_above = f"{facts.new_above:,} new above" if facts.new_above else ""
    extras = [
        loading_text(facts),
        facts.bulk_progress,
        facts.marked,
        "" if facts.error else facts.no_log_dirs,
        facts.dropped_marks,
        new_above,
    ]
    for extra in filter(None, extras):
        text.append("  │  ")
        text.append(extra, style="bold")
    if facts.incomplete and not facts.fetching:
        text.append("  │  ")
        text.append("Incomplete list: some checkpoints may not be shown", style="bold yellow")
    if facts.error:
        text.append("  │  ")
        text.append(f"Backend error (r retries): {facts.error}", style="bold red")
    return text
