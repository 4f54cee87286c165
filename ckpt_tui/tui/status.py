"""The header line (what the backend holds) and the status line (what the user is doing)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text

from ckpt_tui.catalog import Catalog, soonest_expiry
from ckpt_tui.sizes import format_total, total
from ckpt_tui.ttl import describe_expiry

if TYPE_CHECKING:
    from ckpt_tui.tui.screens.browse import BrowseScreen


def header_text(backend: str, catalog: Catalog | None, now: datetime) -> Text:
    """'ckpt-tui · local store /x · 6 runs · 47 checkpoints · 146.2 GiB · next expiry in 2 h'."""
    text = Text()
    text.append("ckpt-tui", style="bold")
    text.append(f"  {backend}")
    if catalog is None:
        return text
    stored = [row for row in catalog.rows if not row.is_missing]
    soonest = soonest_expiry(stored)
    parts = [
        f"{len(catalog.runs):,} runs",
        f"{len(stored):,} checkpoints",
        format_total(total(row.size for row in stored)),
        f"next expiry {describe_expiry(soonest, now)}" if soonest else "nothing expires",
    ]
    text.append("  ·  " + "  ·  ".join(parts))
    return text


def marked_text(screen: BrowseScreen) -> str:
    catalog = screen.catalog
    marks = screen.checkpoints_table.marks
    if not marks or catalog is None:
        return ""
    rows = [catalog.row_by_path[key] for key in marks if key in catalog.row_by_path]
    return f"{len(rows):,} marked · {format_total(total(row.size for row in rows))}"


def status_text(screen: BrowseScreen, now: datetime) -> Text:
    """View and sort on the left; marks, loading progress and errors on the right."""
    text = Text(screen.state.describe())
    extras = []
    if screen.fetching:
        loaded = screen.progress
        extras.append(f"{loaded[0]:,} of {loaded[1]:,} loaded" if loaded else "Loading…")
    bulk = getattr(screen, "bulk_progress", "")
    if bulk:
        extras.append(bulk)
    marked = marked_text(screen)
    if marked:
        extras.append(marked)
    for extra in extras:
        text.append("  │  ")
        text.append(extra, style="bold")
    if screen.error:
        text.append("  │  ")
        text.append(f"Backend error (r retries): {screen.error}", style="bold red")
    return text
