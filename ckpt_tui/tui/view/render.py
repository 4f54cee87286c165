"""How runs and checkpoint rows become table cells: plain text plus a style name, never markup."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from operator import attrgetter

from rich.cells import cell_len

from ckpt_tui.catalog import CheckpointRow, RunSummary
from ckpt_tui.sizes import format_size, format_total
from ckpt_tui.timekeeping.ttl import describe_expiry, expiry_state, format_created
from ckpt_tui.tui.widgets import Cell, Column

RUN_COLUMNS = [
    Column("name", "Run", 18, flex=1),
    Column("model", "Base model", 32),
    Column("count", "Ckpts", 5, align="right"),
    Column("size", "Size", 11, align="right"),
    Column("expiry", "Next expiry", 13),
    Column("missing", "Missing", 7),
]
RUN_DROPS = ("model", "cost")
"""Run columns dropped, in this order, until the table fits the terminal."""
COST_COLUMN = Column("cost", "Cost/mo", 14, align="right")
"""What a run or backend costs per month, and where its rate came from ("billing")."""


def run_columns(with_cost: bool) -> list[Column]:
    """The runs pane's columns; the cost column when some backend has a storage rate."""
    if not with_cost:
        return RUN_COLUMNS
    at = [column.key for column in RUN_COLUMNS].index("size") + 1
    return [*RUN_COLUMNS[:at], COST_COLUMN, *RUN_COLUMNS[at:]]


def checkpoint_columns(metric: str | None, with_run: bool, backend_width: int = 0) -> list[Column]:
    """The checkpoint table's columns; the metric column is titled by its key. The backend
    column (`backend_width` wide: the longest name) shows only when rows of several backends
    share the table."""
    columns = [Column("name", "Checkpoint", 14, flex=1)]
    if backend_width:
        columns.append(Column("backend", "Backend", max(backend_width, len("Backend"))))
    if with_run:
        columns.append(Column("run", "Run", 12, flex=2))
    columns += [
        Column("kind", "Kind", 7),
        Column("step", "Step", 5, align="right"),
        Column("epoch", "Ep", 4, align="right"),
        Column("metric", (metric or "metric")[:9], 9, align="right"),
        Column("size", "Size", 10, align="right"),
        Column("created", "Created", 14),  # "12 minutes ago"
        Column("expires", "Expires", 13),  # "in 59 minutes"
        Column("public", "Pub", 3),
        Column("flags", "Flags", 12, flex=1),
    ]
    return columns


CHECKPOINT_DROPS = ("created", "epoch", "public", "metric", "run", "kind")
"""Checkpoint columns dropped, in this order, until the table fits the terminal (the kind
goes only when a backend column needs its room)."""


def fit_columns(
    columns: list[Column],
    width: int,
    drops: Sequence[str] = CHECKPOINT_DROPS,
    wants: Mapping[str, int] | None = None,
) -> list[Column]:
    """Drop the least useful columns until the minimum widths fit `width`; then widen the
    flexible ones toward the widths their cells `wants`, in proportion to what each lacks."""
    chosen = list(columns)
    for key in drops:
        if minimum_width(chosen) <= width:
            break
        chosen = without(chosen, key)
    wants = wants or {}
    for key in ROOM_DROPS:  # names cut while the epoch and Pub columns take room: drop them
        if lacking(chosen, wants) <= width - minimum_width(chosen):
            break
        chosen = without(chosen, key)
    return widened(chosen, width - minimum_width(chosen), wants)


ROOM_DROPS = ("epoch", "public")
"""Dropped, in this order, while names, runs or flags would be cut; "public" then shows in
the flags."""


def without(columns: list[Column], key: str) -> list[Column]:
    return [column for column in columns if column.key != key]


def lacking(columns: list[Column], wants: Mapping[str, int]) -> int:
    """How many more cells the flexible columns need to show their widest cells whole."""
    return sum(max(0, wants.get(c.key, 0) - c.width) for c in columns if c.flex)


def widened(columns: list[Column], spare: int, wants: Mapping[str, int]) -> list[Column]:
    """Columns widened toward their wants, smallest need first: each gets what it lacks or
    an equal share of what is left, so one very long name cannot starve the others."""
    needs = {c.key: wants.get(c.key, 0) - c.width for c in columns if c.flex}
    give: dict[str, int] = {}
    waiting = sorted((need, key) for key, need in needs.items() if need > 0)
    for index, (need, key) in enumerate(waiting):
        give[key] = max(0, min(need, spare // (len(waiting) - index)))
        spare -= give[key]
    return [replace(c, width=c.width + give.get(c.key, 0)) for c in columns]


FLAGS_SAMPLE = 500
"""Rows whose flags are measured (the first of the view): reading every row's flags costs
80 ms at 100,000 rows, and the flags column is the last and flexible one."""


def wanted_widths(rows: Sequence[CheckpointRow]) -> dict[str, int]:
    """How wide the name and run cells of a view's rows are, every row's (a long name far
    down the list widens its column too: 10 ms at 100,000 rows), and the flags of the first."""
    flags = (cell_len(flags_cell(row, True).text) for row in rows[:FLAGS_SAMPLE])
    return {
        "name": widest(list(map(attrgetter("name"), rows))),
        "run": widest(list({row.run_name for row in rows})),
        "flags": max(flags, default=0),
    }


def widest(texts: Sequence[str]) -> int:
    """The most cells any of `texts` takes (len for ASCII: cell_len of every one is 10x
    slower)."""
    wide = [text for text in texts if not text.isascii()]
    return max(max(map(len, texts), default=0), max(map(cell_len, wide), default=0))


def minimum_width(columns: Sequence[Column]) -> int:
    return 2 + sum(column.width + 1 for column in columns)


def expiry_cell(expires_at: datetime | None, now: datetime, missing: bool = False) -> Cell:
    """'in 3 days', red under 24 h; 'never'; 'expired'."""
    if missing:
        return Cell("-")
    state = expiry_state(expires_at, now)
    style = {"soon": "error", "expired": "error", "never": "dim"}.get(state)
    text = "expired" if state == "expired" else describe_expiry(expires_at, now)
    return Cell(text, style)


def metric_text(row: CheckpointRow, metric: str | None) -> str:
    value = None if metric is None else row.metrics.get(metric)
    return "" if value is None else f"{value:.4g}"


def checkpoint_cells(
    row: CheckpointRow, metric: str | None, now: datetime, keys: Sequence[str]
) -> list[Cell]:
    """The cells of one checkpoint row, for the columns named by `keys`."""
    values = {
        "name": Cell(row.name, "bold" if row.final else None),
        "backend": Cell(row.backend, "accent"),
        "run": Cell(row.run_name),
        "kind": Cell(row.kind),
        "step": Cell("" if row.step is None else str(row.step)),
        "epoch": Cell(epoch_text(row.epoch)),
        "metric": Cell(metric_text(row, metric)),
        "size": Cell("-" if row.is_missing else format_size(row.size, short=True)),
        "created": Cell(format_created(row.created, now)),
        "expires": expiry_cell(row.expires_at, now, row.is_missing),
        "public": Cell("yes" if row.public else "", "success" if row.public else None),
        "flags": flags_cell(row, with_public="public" not in keys),
    }
    return [values[key] for key in keys]


def epoch_text(epoch: float | None) -> str:
    """'2', or a fraction as recorded, shortened to fit ('1.25', '0.333')."""
    if epoch is None:
        return ""
    return str(epoch) if isinstance(epoch, int) else f"{epoch:.3g}"


def flags_cell(row: CheckpointRow, with_public: bool = False) -> Cell:
    """The flags; "public" only `with_public` (when the Pub column is not shown)."""
    words = [word for word in row.flags() if with_public or word != "public"]
    style = "warning" if row.is_missing else ("accent" if row.resume_point else None)
    return Cell(" ".join(words), style)


def run_cells(run: RunSummary, now: datetime, keys: Sequence[str]) -> list[Cell]:
    model = run.base_model + (f" r{run.lora_rank}" if run.lora_rank else "")
    soonest = run.soonest_expiry
    values = {
        "name": Cell(run.display_name),
        "model": Cell(model),
        "count": Cell(str(len(run.stored_rows))),
        "size": Cell(format_total(run.size)) if run.stored_rows else Cell("–", "dim"),
        "expiry": expiry_cell(soonest, now) if soonest else Cell("-", "dim"),
        "missing": Cell(f"⚠ {run.missing_count}", "warning") if run.missing_count else Cell(""),
    }
    return [values[key] for key in keys]
