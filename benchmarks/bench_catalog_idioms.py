"""The catalog's C-level idioms (`map`, `compress`, `attrgetter`) against plain comprehensions.

    python benchmarks/bench_catalog_idioms.py [--rows 100000] [--reps 15]

Joins a catalog of `--rows` checkpoints (100 per run, a few with metadata, a twentieth
missing), then times each hot function of `ckpt_tui/catalog`, `ckpt_tui/sizes` and the filter of
`ckpt_tui/substring_index` both ways over the same rows. Prints the median of `--reps` runs
of each (milliseconds, process CPU time, so other load on the machine counts less) and which
way is faster; the code keeps the faster way, and says so in a comment where an idiom stays.
Asserts that both ways give the same answer. Then times making the rows of checkpoints that
no log names and that have no metadata, in `make_row`'s one step and in `row_with_facts`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from itertools import compress, repeat
from operator import attrgetter, contains, is_not, itemgetter, methodcaller, not_
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ckpt_tui.api_types import Checkpoint, TrainingRun
from ckpt_tui.catalog import CheckpointRow, build_catalog
from ckpt_tui.catalog.row_maker import make_row, row_with_facts
from ckpt_tui.sizes import Size

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
Way = Callable[[], object]
RowsWay = Callable[[], list[CheckpointRow]]


def checkpoints(count: int) -> tuple[list[TrainingRun], list[Checkpoint]]:
    runs = [
        TrainingRun(f"run-{r:05d}", "Qwen/Qwen3-8B", "me", True, NOW, lora_rank=32)
        for r in range(count // 100)
    ]
    items = [
        Checkpoint(
            f"weights/{c:06d}",
            "training",
            NOW - timedelta(minutes=c * len(runs) + r),
            f"tinker://run-{r:05d}/weights/{c:06d}",
            size_bytes=None if c % 50 == 0 else 1_000_000 + c,
            user_metadata={"step": str(c), "loss": "0.5"} if c % 10 == 0 else None,
            expires_at=NOW + timedelta(days=c % 40) if c % 3 == 0 else None,
        )
        for c in range(100)
        for r in range(len(runs))
    ]
    return runs, items


def rows_with_missing(rows: list[CheckpointRow]) -> list[CheckpointRow]:
    """Every twentieth row as if the server no longer had it (no server checkpoint)."""
    return [
        msgspec.structs.replace(row, server=None) if i % 20 == 0 else row
        for i, row in enumerate(rows)
    ]


def fields(row: CheckpointRow) -> tuple[object, ...]:
    """A row's values (rows compare by identity)."""
    return msgspec.structs.astuple(row)


# --- each function both ways: (idiom, comprehension) -----------------------------------------


def group_by_run_idiom(items: Sequence[Checkpoint]) -> dict[str, list[Checkpoint]]:
    paths = list(map(attrgetter("tinker_path"), items))
    run_ids: Iterable[str] = map(itemgetter(2), map(methodcaller("split", "/", 3), paths))
    return group(run_ids, items)


def group_by_run_plain(items: Sequence[Checkpoint]) -> dict[str, list[Checkpoint]]:
    return group([ckpt.tinker_path.split("/", 3)[2] for ckpt in items], items)


def group(run_ids: Iterable[str], items: Sequence[Checkpoint]) -> dict[str, list[Checkpoint]]:
    by_run: dict[str, list[Checkpoint]] = {}
    for run_id, ckpt in zip(run_ids, items, strict=True):
        found = by_run.get(run_id)
        if found is None:
            by_run[run_id] = [ckpt]
        else:
            found.append(ckpt)
    return by_run


def all_tinker_idiom(items: Sequence[Checkpoint]) -> bool:
    return all(map(methodcaller("startswith", "tinker://"), map(attrgetter("tinker_path"), items)))


def all_tinker_plain(items: Sequence[Checkpoint]) -> bool:
    return all([ckpt.tinker_path.startswith("tinker://") for ckpt in items])


def has_value_idiom(rows: Sequence[CheckpointRow]) -> list[bool]:
    return list(map(is_not, map(attrgetter("expires_at"), rows), repeat(None)))


def has_value_plain(rows: Sequence[CheckpointRow]) -> list[bool]:
    get = attrgetter("expires_at")
    return [get(row) is not None for row in rows]


def has_metric_idiom(rows: Sequence[CheckpointRow]) -> list[bool]:
    values = map(methodcaller("get", "loss"), map(attrgetter("metrics"), rows))
    return list(map(is_not, values, repeat(None)))


def has_metric_plain(rows: Sequence[CheckpointRow]) -> list[bool]:
    return [row.metrics.get("loss") is not None for row in rows]


def split_idiom(rows: Sequence[CheckpointRow]) -> tuple[list[CheckpointRow], list[CheckpointRow]]:
    present = has_value_idiom(rows)
    return list(compress(rows, present)), list(compress(rows, map(not_, present)))


def split_plain(rows: Sequence[CheckpointRow]) -> tuple[list[CheckpointRow], list[CheckpointRow]]:
    present = has_value_idiom(rows)
    valued = [row for row, has in zip(rows, present, strict=True) if has]
    empty = [row for row, has in zip(rows, present, strict=True) if not has]
    return valued, empty


def stored_only_idiom(rows: Sequence[CheckpointRow]) -> list[CheckpointRow]:
    return list(compress(rows, map(is_not, map(attrgetter("server"), rows), repeat(None))))


def stored_only_plain(rows: Sequence[CheckpointRow]) -> list[CheckpointRow]:
    return [row for row in rows if row.server is not None]


def total_idiom(sizes: Sequence[Size]) -> tuple[int, int, int]:
    counts = list(map(attrgetter("bytes"), sizes))
    kinds = list(map(attrgetter("kind"), sizes))
    return sum(filter(None, counts)), kinds.count("estimate"), counts.count(None)


def total_plain(sizes: Sequence[Size]) -> tuple[int, int, int]:
    counts = [size.bytes for size in sizes]
    kinds = [size.kind for size in sizes]
    return sum(filter(None, counts)), kinds.count("estimate"), counts.count(None)


def soonest_idiom(rows: Sequence[CheckpointRow]) -> datetime | None:
    return min(filter(None, map(attrgetter("expires_at"), rows)), default=None)


def soonest_plain(rows: Sequence[CheckpointRow]) -> datetime | None:
    return min([row.expires_at for row in rows if row.expires_at is not None], default=None)


def filter_idiom(pair: tuple[list[CheckpointRow], list[str]]) -> list[CheckpointRow]:
    rows, haystacks = pair
    return list(compress(rows, map(contains, haystacks, repeat("run-0004"))))


def filter_plain(pair: tuple[list[CheckpointRow], list[str]]) -> list[CheckpointRow]:
    rows, haystacks = pair
    return [row for row, text in zip(rows, haystacks, strict=True) if "run-0004" in text]


def median_ms(way: Way, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.process_time()
        way()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    runs, items = checkpoints(args.rows)
    catalog = build_catalog(runs, items, [])
    rows = rows_with_missing(catalog.rows)
    sizes = [row.size for row in rows]
    pair = (rows, [row.haystack for row in rows])
    cases: list[tuple[str, str, Way, Way]] = [
        ("join.group_by_run", "map/methodcaller", lambda: group_by_run_idiom(items),
         lambda: group_by_run_plain(items)),
        ("join.group_by_run check", "all(map(...))", lambda: all_tinker_idiom(items),
         lambda: all_tinker_plain(items)),
        ("query.has_value", "map(is_not)", lambda: has_value_idiom(rows),
         lambda: has_value_plain(rows)),
        ("query.has_value metric", "map(methodcaller)", lambda: has_metric_idiom(rows),
         lambda: has_metric_plain(rows)),
        ("query.sort_rows split", "compress", lambda: split_idiom(rows),
         lambda: split_plain(rows)),
        ("rows.stored_only", "compress", lambda: stored_only_idiom(rows),
         lambda: stored_only_plain(rows)),
        ("rows.soonest_expiry", "filter/map", lambda: soonest_idiom(rows),
         lambda: soonest_plain(rows)),
        ("sizes.total", "map(attrgetter)", lambda: total_idiom(sizes),
         lambda: total_plain(sizes)),
        ("substring_index.filter", "compress/map(contains)", lambda: filter_idiom(pair),
         lambda: filter_plain(pair)),
    ]  # fmt: skip
    plain = [
        ((c.tinker_path.split("/", 3)[2], c.checkpoint_id, c.tinker_path, c.checkpoint_type), c)
        for c in items
        if not c.user_metadata
    ]
    size = Size.exact(1)
    choices: list[tuple[str, str, RowsWay, str, RowsWay]] = [
        ("row_maker.make_row", "row_with_facts",
         lambda: [row_with_facts("run", p, c, None, size) for p, c in plain],
         "make_row (one step)", lambda: [make_row("run", p, c, None, size) for p, c in plain]),
    ]  # fmt: skip
    print(f"{len(rows):,} rows; median of {args.reps} runs, ms of CPU time")
    print(f"{'function':<28}{'idiom':<24}{'idiom':>8}{'comprehension':>15}  faster")
    for name, idiom, one, other in cases:
        assert one() == other(), name
        a, b = median_ms(one, args.reps), median_ms(other, args.reps)
        faster = "idiom" if a < b else "comprehension"
        print(f"{name:<28}{idiom:<24}{a:8.1f}{b:15.1f}  {faster} ({max(a, b) / min(a, b):.1f}x)")
    print(f"\nrows of the {len(plain):,} checkpoints without metadata or record, both ways")
    for name, label, one, code_label, code in choices:
        assert list(map(fields, one())) == list(map(fields, code())), name
        a, b = median_ms(one, args.reps), median_ms(code, args.reps)
        print(f"{name:<22}{label:<18}{a:8.1f}  {code_label:<22}{b:8.1f}  ({a / b:.2f}x)")


if __name__ == "__main__":
    main()
