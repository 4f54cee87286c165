"""How fast FastTable paints 1k/10k/100k checkpoint-like rows in a headless Textual app.

Run: python benchmarks/bench_table.py [--reps N] [--no-datatable]

A frame counts as painted when Textual's compositor has finished calling the table's
`render_lines` (the Line API batch for one frame) after the action being timed. Each figure is
the median over N repetitions, in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import statistics
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import DataTable

from ckpt_tui.catalog.substring_index import SubstringIndex
from ckpt_tui.tui.widgets import Cell, Column, FastTable

SIZES = (1_000, 10_000, 100_000)
SCREEN = (120, 40)
FRAME_TIMEOUT = 10.0
SETTLE_SECONDS = 0.03
FILTER_FIGURES = ("scan_naive", "scan_index", "set_rows", "filter_naive", "filter_index")
KEYS = ("down", "pagedown", "up", "pageup")
QUERIES = ("s", "sf", "sft", "sft-", "sft-l", "sft-ll", "sft-lla", "sft-llam", "sft-llama")

LEGEND = """\
refresh: bare refresh() -> frame (Textual's own frame latency); load: set_rows -> frame;
down..pageup: keystroke -> frame; scan_naive: lowercase + substring over every name;
scan_index: SubstringIndex.filter (names lowercased once, narrowing while typing);
set_rows: the call alone; filter_*: scan + set_rows -> frame, per typed character;
sort: sorted(rows, by size) + set_rows -> frame. Targets: load < 1000, keys/filter < 50."""


@dataclass(frozen=True, slots=True)
class BenchRow:
    """Ten fields, like a checkpoint listing."""

    run_id: str
    name: str
    kind: str
    step: int
    size_bytes: int
    created: str
    expires: str
    public: bool
    path: str
    status: str


COLUMNS = [
    Column("run", "Run", 10),
    Column("name", "Name", 16, flex=1),
    Column("kind", "Kind", 9),
    Column("step", "Step", 7, align="right"),
    Column("size", "Size", 9, align="right"),
    Column("created", "Created", 16),
    Column("expires", "Expires", 10),
    Column("public", "Pub", 3),
    Column("path", "Path", 12),
    Column("status", "Status", 8),
]


def make_rows(count: int, seed: int = 7) -> list[BenchRow]:
    """Deterministic rows with mixed names so substring filters match a varying share."""
    rng = random.Random(seed)
    prefixes = ("sft-llama", "rl-qwen", "dpo-mistral", "sft-qwen", "eval-llama")
    return [
        BenchRow(
            run_id=f"run-{index // 50:05d}",
            name=f"{rng.choice(prefixes)}-{index:06d}",
            kind=rng.choice(("weights", "sampler", "state")),
            step=index * 10,
            size_bytes=rng.randrange(10**6, 10**11),
            created=f"2025-0{1 + index % 9}-1{index % 10} 12:{index % 60:02d}",
            expires="never" if index % 4 else "in 3 days",
            public=index % 11 == 0,
            path=f"tinker://run-{index // 50:05d}/weights/{index:06d}",
            status=rng.choice(("ok", "ok", "ok", "missing", "expiring")),
        )
        for index in range(count)
    ]


def human_size(size: int) -> str:
    """A short size such as "12.3 GB"."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"


def render_row(row: BenchRow) -> Sequence[Cell | str]:
    """Cells for one row, as the app would build them."""
    status_style = {"missing": "error", "expiring": "warning"}.get(row.status)
    return [
        row.run_id,
        Cell(row.name, "bold"),
        row.kind,
        str(row.step),
        human_size(row.size_bytes),
        row.created,
        row.expires,
        "yes" if row.public else "",
        row.path,
        Cell(row.status, status_style),
    ]


def cell_text(cell: Cell | str) -> str:
    """The plain text of a cell."""
    return cell if isinstance(cell, str) else cell.text


def row_key(row: BenchRow) -> Hashable:
    """Rows are identified by their path."""
    return row.path


class FrameClock:
    """Records when a widget's `render_lines` batch finished and wakes waiters."""

    def __init__(self) -> None:
        self.painted = asyncio.Event()
        self.painted_at = 0.0

    def mark(self) -> None:
        self.painted_at = time.perf_counter()
        self.painted.set()

    async def since(self, start: float) -> float:
        """Milliseconds from `start` to the end of the next painted frame."""
        await asyncio.wait_for(self.painted.wait(), FRAME_TIMEOUT)
        return (self.painted_at - start) * 1000


class TimedFastTable(FastTable[BenchRow]):
    """FastTable that reports each painted frame to a FrameClock."""

    def __init__(self, clock: FrameClock) -> None:
        super().__init__(COLUMNS, render_row, row_key, empty_message="Loading…")
        self.clock = clock

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.clock.mark()
        return lines


class TimedDataTable(DataTable[str]):
    """DataTable that reports each painted frame to a FrameClock."""

    def __init__(self, clock: FrameClock) -> None:
        super().__init__()
        self.clock = clock

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.clock.mark()
        return lines


class BenchApp(App[None]):
    """Holds one timed table."""

    def __init__(self, use_datatable: bool = False) -> None:
        super().__init__()
        self.clock = FrameClock()
        self.use_datatable = use_datatable

    def compose(self) -> ComposeResult:
        if self.use_datatable:
            yield TimedDataTable(self.clock)
        else:
            yield TimedFastTable(self.clock)


async def timed_frame(pilot: Pilot[None], clock: FrameClock, action: Callable[[], object]) -> float:
    """Settle the app, run `action`, return ms until the next frame is painted."""
    # Longer than a frame (Textual paints at most 60 per second), so no earlier frame is
    # still pending when the clock is cleared.
    await pilot.pause(SETTLE_SECONDS)
    clock.painted.clear()
    start = time.perf_counter()
    action()
    return await clock.since(start)


async def bench_load(rows: list[BenchRow], reps: int) -> tuple[float, float]:
    """Median ms from `set_rows` (data arrival) to the first painted frame, and from a bare
    `refresh()` of the same table to its frame (Textual's own frame latency, for reference)."""
    app = BenchApp()
    loads, refreshes = [], []
    async with app.run_test(size=SCREEN) as pilot:
        table = app.query_one(TimedFastTable)
        for _ in range(reps):
            table.set_rows([])
            loads.append(await timed_frame(pilot, app.clock, lambda: table.set_rows(rows)))
            refreshes.append(await timed_frame(pilot, app.clock, table.refresh))
    return statistics.median(loads), statistics.median(refreshes)


async def bench_keys(rows: list[BenchRow], reps: int) -> dict[str, float]:
    """Median ms from a simulated keystroke to the painted frame, per key."""
    app = BenchApp()
    results: dict[str, float] = {}
    async with app.run_test(size=SCREEN) as pilot:
        table = app.query_one(TimedFastTable)
        table.set_rows(rows)
        table.focus()
        for key in KEYS:
            # Start where `reps` presses cannot reach either end (a no-op key paints nothing).
            table.move_cursor(len(rows) // 4 if key in ("down", "pagedown") else len(rows) * 3 // 4)
            press = functools.partial(app.simulate_key, key)
            samples = [await timed_frame(pilot, app.clock, press) for _ in range(reps)]
            results[key] = statistics.median(samples)
    return results


def naive_filter(rows: Sequence[BenchRow], query: str) -> list[BenchRow]:
    """What the app would do without an index: lowercase every name on every keystroke."""
    needle = query.lower()
    return [row for row in rows if needle in row.name.lower()]


async def bench_filter(rows: list[BenchRow]) -> dict[str, float]:
    """Median ms per typed query character, naive scan vs SubstringIndex, to the frame."""
    samples: dict[str, list[float]] = {name: [] for name in FILTER_FIGURES}
    index = SubstringIndex(rows, attrgetter("name"))
    filters: dict[str, Callable[[str], list[BenchRow]]] = {
        "naive": functools.partial(naive_filter, rows),
        "index": index.filter,
    }
    app = BenchApp()
    async with app.run_test(size=SCREEN) as pilot:
        table = app.query_one(TimedFastTable)
        table.set_rows(rows)
        for query in QUERIES:
            for name, scan in filters.items():

                def apply(
                    name: str = name,
                    scan: Callable[[str], list[BenchRow]] = scan,
                    query: str = query,
                ) -> None:
                    start = time.perf_counter()
                    matches = scan(query)
                    middle = time.perf_counter()
                    table.set_rows(matches)
                    samples[f"scan_{name}"].append((middle - start) * 1000)
                    samples["set_rows"].append((time.perf_counter() - middle) * 1000)

                samples[f"filter_{name}"].append(await timed_frame(pilot, app.clock, apply))
    return {name: statistics.median(values) for name, values in samples.items()}


async def bench_sort(rows: list[BenchRow], reps: int) -> float:
    """Median ms to sort by size (descending) and paint the frame."""
    app = BenchApp()
    samples = []
    async with app.run_test(size=SCREEN) as pilot:
        table = app.query_one(TimedFastTable)
        table.set_rows(rows)
        by_size = attrgetter("size_bytes")
        for rep in range(reps):

            def apply(reverse: bool = rep % 2 == 0) -> None:
                table.set_rows(sorted(rows, key=by_size, reverse=reverse))

            samples.append(await timed_frame(pilot, app.clock, apply))
    return statistics.median(samples)


async def bench_datatable_load(rows: list[BenchRow], reps: int) -> float:
    """Median ms from DataTable.add_rows to its first painted frame (for comparison)."""
    cells = [[cell_text(cell) for cell in render_row(row)] for row in rows]
    samples = []
    for _ in range(reps):
        app = BenchApp(use_datatable=True)
        async with app.run_test(size=SCREEN) as pilot:
            table = app.query_one(TimedDataTable)
            table.add_columns(*(column.label for column in COLUMNS))
            add_rows = functools.partial(table.add_rows, cells)
            samples.append(await timed_frame(pilot, app.clock, add_rows))
    return statistics.median(samples)


def print_table(title: str, header: Sequence[str], lines: Sequence[Sequence[str]]) -> None:
    """Print an aligned plain-text table."""
    widths = [max(len(str(item)) for item in column) for column in zip(header, *lines, strict=True)]
    print(f"\n{title}")
    for line in (header, *lines):
        print("  ".join(str(item).rjust(width) for item, width in zip(line, widths, strict=True)))


async def run(reps: int, with_datatable: bool) -> None:
    """Run every measurement and print medians in ms."""
    lines = []
    for size in SIZES:
        rows = make_rows(size)
        load, refresh = await bench_load(rows, reps)
        keys = await bench_keys(rows, reps * 3)
        filtering = await bench_filter(rows)
        sort = await bench_sort(rows, reps)
        figures = [refresh, load, *keys.values(), *(filtering[name] for name in FILTER_FIGURES)]
        lines.append([f"{size:,}", *(f"{figure:.1f}" for figure in (*figures, sort))])
    header = ["rows", "refresh", "load", *KEYS, *FILTER_FIGURES, "sort"]
    print_table(f"FastTable, median ms ({reps} reps; keys x{reps * 3})", header, lines)
    print(LEGEND)
    if with_datatable:
        for size in (1_000, 10_000):
            datatable = await bench_datatable_load(make_rows(size), max(1, reps // 2))
            print(f"plain DataTable, {size:,} rows: add_rows -> frame {datatable:.1f} ms")


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5, help="repetitions per figure")
    parser.add_argument("--no-datatable", action="store_true", help="skip the DataTable run")
    args = parser.parse_args()
    asyncio.run(run(args.reps, not args.no_datatable))


if __name__ == "__main__":
    main()
