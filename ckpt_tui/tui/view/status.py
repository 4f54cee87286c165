"""The header line (what the backend holds) and the status line (what the user is doing)."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence, Set
from dataclasses import dataclass
from datetime import datetime

from rich.text import Text

from ckpt_tui.backends import BackendState, Fleet, Totals
from ckpt_tui.backends.fleet import KEY_REFUSED, ErrorKind
from ckpt_tui.backends.fleet_view import FleetCatalog
from ckpt_tui.catalog import CheckpointRow, stored_only
from ckpt_tui.cost import MonthlyCost, format_cost, monthly_cost
from ckpt_tui.sizes import SizeTotal, format_total, total
from ckpt_tui.timekeeping.ttl import describe_expiry


def with_cost(size: SizeTotal, rate: float | None) -> str:
    """'146.2 GiB', or with a storage rate '146.2 GiB ($14.62/mo)'."""
    text = format_total(size)
    return text if rate is None else f"{text} ({format_cost(monthly_cost(size, rate))})"


def header_text(
    backend: str,
    catalog: FleetCatalog | None,
    now: datetime,
    rate: float | None = None,
    width: int | None = None,
    short_backend: str | None = None,
    readonly: bool = False,
    partial: bool = False,
) -> Text:
    """'ckpt-tui  6 runs · 47 checkpoints · 146.2 GiB · next expiry in 2 hours  │  BACKEND'.

    With a storage `rate` (USD per GiB-month) the size says what it costs per month. In a
    narrow `width` the backend stays (as `short_backend` if need be, cut from the left at
    worst): the totals give way first, from the end. Read-only mode says so right after the
    name, where no width cuts it; so does a `partial` list (its backend could not all be read).
    """
    parts = [] if catalog is None else total_parts(catalog, now, rate)
    short = short_backend or backend
    room = width if width is not None else 10**6
    # The full name while runs and checkpoints still fit beside it, then the short one.
    tries = [(backend, n) for n in range(len(parts), 1, -1)]
    tries += [(short, n) for n in range(len(parts), -1, -1)]
    for name, count in tries:
        line = header_line(parts[:count], name, readonly, partial)
        if line.cell_len <= room:
            return line
    keep = room - header_line([], "", readonly, partial).cell_len - 1
    return header_line([], "…" + short[-keep:] if keep > 0 else "", readonly, partial)


def total_parts(catalog: FleetCatalog, now: datetime, rate: float | None) -> list[str]:
    soonest = catalog.soonest_expiry  # cached per catalog: this runs on every key press
    return [
        f"{len(catalog.runs):,} runs",
        f"{len(catalog.stored_rows):,} checkpoints",
        with_cost(catalog.stored_size, rate),
        f"next expiry {describe_expiry(soonest, now)}" if soonest else "nothing expires",
    ]


PARTIAL_MARK = "! partial"
"""After a backend whose list is not whole, in the header."""


def header_line(
    parts: list[str], backend: str, readonly: bool = False, partial: bool = False
) -> Text:
    text = Text()
    text.append("ckpt-tui", style="bold")
    if readonly:
        text.append(" ")
        text.append(" READ-ONLY ", style="bold reverse")
    if partial:
        text.append(" ")
        text.append(PARTIAL_MARK, style="bold yellow")
    if parts:
        text.append("  " + " · ".join(parts))
    text.append(f"  │  {backend}", style="dim")
    return text


def fleet_header(
    fleet: Fleet, now: datetime, width: int, fetching: Collection[str], readonly: bool = False
) -> Text:
    """'ckpt-tui  12 runs · 470 checkpoints · 146.2 GiB ($14.62/mo) · next expiry in 2 hours  │
    tinker ✓ 120 ms · box1 ✓ 3 ms · box2 ✗ unreachable': totals for all backends, then each
    backend's reachability and latency. When narrow, the totals give way first (from the
    end) down to the runs and checkpoints, then each backend shows its short form ('box1 ✓')
    beside them, then beside the checkpoints alone; then the totals go too, then only the
    names stay."""
    parts = fleet_total_parts(fleet.total(), now) if fleet.snapshots() else []
    states = fleet.states
    forms = [[badge(state, state.name in fetching, form) for state in states] for form in (0, 1, 2)]
    tries = [(forms[0], parts[:n]) for n in range(len(parts), 1, -1)]
    tries += [(forms[1], parts[:2]), (forms[1], parts[1:2])]  # the checkpoints stay longest
    tries += [(forms[0], []), *((form, []) for form in forms[1:])]
    for badges, shown in tries:
        line = header_line(shown, " · ".join(badges), readonly)
        if line.cell_len <= width:
            return line
    return header_line([], " ".join(forms[2]), readonly)


def fleet_total_parts(totals: Totals, now: datetime) -> list[str]:
    soonest = totals.soonest_expiry
    size = format_total(totals.size)
    if totals.cost is not None:
        size += f" ({format_cost(totals.cost)})"
    return [
        f"{totals.runs:,} runs",
        f"{totals.checkpoints:,} checkpoints",
        size,
        f"next expiry {describe_expiry(soonest, now)}" if soonest else "nothing expires",
    ]


def badge(state: BackendState, loading: bool, form: int) -> str:
    """One backend in the header: form 0 'box1 ✓ 3 ms' (or '✗ unreachable', '… loading',
    '! partial 3 ms' when its list is not whole), form 1 'box1 ✓' (or '!'), form 2 'box1'."""
    name = state.name + (" ro" if state.backend.readonly and form == 0 else "")
    if state.error is not None:
        return f"{name} ✗" + (f" {state.error_kind}" if form == 0 else "")
    if state.snapshot is None or (loading and not state.complete):
        return name if form == 2 else f"{name} …" + (" loading" if form == 0 else "")
    if form == 2:
        return name
    if form == 1:
        return f"{name} {'✓' if state.complete else '!'}"
    mark = "✓" if state.complete else PARTIAL_MARK
    if state.latency is None:
        return f"{name} {mark}"
    return f"{name} {mark} {format_latency(state.latency)}"


def failed_text(name: str, error: str, kind: ErrorKind) -> str:
    """A failed backend's error where its checkpoints would be (`name` '' with one backend
    open): 'Press r to retry. box: …', or for a refused key, which a retry would send again,
    'box: key refused: …'."""
    if kind == KEY_REFUSED:
        return f"{name}: key refused: {error}" if name else f"Key refused: {error}"
    return f"Press r to retry. {name}: {error}" if name else f"Press r to retry. {error}"


def format_latency(seconds: float) -> str:
    """'<1 ms', '3 ms', '120 ms', '1.2 s'."""
    if seconds < 0.0005:
        return "<1 ms"
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    return f"{seconds:.1f} s"


def rows_cost(rows: Sequence[CheckpointRow], fleet: Fleet) -> MonthlyCost | None:
    """What `rows` cost per month, each at its own backend's rate ("at least" when one of
    their backends has no rate); None when none has one."""
    rates = {state.name: state.rate for state in fleet.states}
    by_backend: dict[str, list[CheckpointRow]] = {}
    for row in rows:
        by_backend.setdefault(row.backend, []).append(row)
    costs, unpriced = [], False
    for name, group in by_backend.items():
        rate = rates.get(name)
        if rate is None:
            unpriced = True
        else:
            costs.append(monthly_cost(total(row.size for row in group), rate))
    if not costs:
        return None
    return MonthlyCost(
        sum(cost.usd for cost in costs),
        at_least=unpriced or any(cost.at_least for cost in costs),
        estimated=any(cost.estimated for cost in costs),
    )


def marked_text(catalog: FleetCatalog | None, marks: Set[Hashable], fleet: Fleet) -> str:
    """'3 marked · 12.0 GiB', with the monthly cost at each backend's storage rate."""
    if not marks or catalog is None:
        return ""
    marked = [row for row in map(catalog.row, marks) if row is not None]
    rows = stored_only(marked)
    size = total(row.size for row in rows)
    text = f"{len(rows):,} marked · {format_total(size)}"
    cost = rows_cost(rows, fleet)
    if cost is not None:
        text += f" · {format_cost(cost)}"
    skipped = len(marked) - len(rows)
    return text + (f" (+{skipped} not stored, skipped)" if skipped else "")


BackendProgress = tuple[str, tuple[int, int] | None]
"""A loading backend's name and its checkpoints (loaded, total) so far, None before a page."""


@dataclass(frozen=True)
class StatusFacts:
    """Everything the status line says, as plain values (the screen keeps them current)."""

    browsing: str = ""
    """The view, sort and filter: `BrowseState.describe()`."""
    view_counts: str = ""
    fetching: bool = False
    refreshing: bool = False
    progress: tuple[BackendProgress, ...] = ()
    """Each loading backend's checkpoints so far (with one backend open, its name is '')."""
    bulk_progress: str = ""
    marked: str = ""
    no_log_dirs: str = ""
    """Why no training logs are shown, when runs are listed but none of their logs was found."""
    dropped_marks: str = ""
    new_above: int = 0
    incomplete: str = ""
    """Which backends' lists are not whole: '' when all are, 'the list' with one backend."""
    first_problem: str = ""
    """The first thing those backends could not read (`?` shows them all)."""
    errors: tuple[tuple[str, str], ...] = ()
    """Each failed backend's name and error; with one backend open, its name is ''."""
    refused: tuple[str, ...] = ()
    """Those of `errors` whose key was refused (a retry cannot help), by the same names."""


def backend_progress(progress: BackendProgress) -> str:
    """'box1 1,000 of 5,000 checkpoints', or before the first page 'box1 waiting for the
    server' (a slow link shows that, not a bare 'Loading…')."""
    name, counts = progress
    what = f"{counts[0]:,} of {counts[1]:,} checkpoints" if counts else "waiting for the server"
    return f"{name} {what}" if name else what


def loading_text(facts: StatusFacts) -> str:
    """'Loading: 1,000 of 5,000 checkpoints' while a first load fills in, 'Refreshing: box1 …,
    box2 …' over a view: each loading backend's checkpoints so far."""
    if not facts.fetching:
        return ""
    verb = "Refreshing" if facts.refreshing else "Loading"
    if not facts.progress:
        return f"{verb}…"
    return f"{verb}: " + ", ".join(map(backend_progress, facts.progress))


def incomplete_text(facts: StatusFacts) -> str:
    """'Incomplete list (? shows why): trainer-out/checkpoint-10: on another file system…',
    with several backends 'Incomplete list (box1; ? shows why): box1: …'."""
    where = "" if facts.incomplete == "the list" else f"{facts.incomplete}; "
    if not facts.first_problem:
        where = where.removesuffix("; ")
        return f"Incomplete list{f' ({where})' if where else ''}: some checkpoints may not be shown"
    return f"Incomplete list ({where}? shows why): {facts.first_problem}"


def status_text(facts: StatusFacts) -> Text:
    """View and sort on the left; marks, loading progress and errors on the right."""
    text = Text(facts.browsing)
    if facts.view_counts:
        text.append(" · ")
        text.append(facts.view_counts, style="bold")
    if facts.incomplete and not facts.fetching:  # first: a narrow line cuts from the end
        text.append("  │  ")
        text.append(incomplete_text(facts), style="bold yellow")
    new_above = f"{facts.new_above:,} new above" if facts.new_above else ""
    extras = [
        loading_text(facts),
        facts.bulk_progress,
        facts.marked,
        "" if facts.errors else facts.no_log_dirs,
        facts.dropped_marks,
        new_above,
    ]
    for extra in filter(None, extras):
        text.append("  │  ")
        text.append(extra, style="bold")
    for name, error in facts.errors:
        text.append("  │  ")
        if name in facts.refused:
            where = f"{name}: key refused" if name else "Key refused"
        else:
            where = (f"{name} failed" if name else "Backend error") + " (r retries)"
        text.append(f"{where}: {error}", style="bold red")
    return text
