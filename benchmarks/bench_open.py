"""Benchmark opening a large store: cold (no metadata file) and warm (metadata cached).

    python benchmarks/bench_open.py --dir STORE [--runs 1000] [--per-run 100] [--reps 5]
        [--drop-caches]

Builds STORE with `bench_server.write_store` when it does not exist yet (1,000 runs of 100
checkpoints: 100,000). A cold open starts with no metadata file (it is deleted first: the
store measures and fingerprints every checkpoint, then writes every row); a warm open finds
the metadata of the files as they are. With `--drop-caches` (root only) the kernel's page,
dentry and inode caches are dropped before every open (`echo 3 > /proc/sys/vm/drop_caches`),
so the disk is read again too. Every open counts the files it opens under the store (outside
`.ckpt-tui/`) with an audit hook (`tests/support/open_audit.py`): the warm open's goal is to
open no checkpoint file. Each open starts on a collected heap, as in a new `serve` process
(the stores opened before leave reference cycles whose 100,000s of objects a collection in
the middle of the next open would walk). Prints medians (and this process's CPU time, as
the machine is shared) with the load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_server import write_store

from ckpt_tui.store import Store
from ckpt_tui.store.layout import Layout
from tests.support.open_audit import files_opened_under


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


Timing = tuple[float, float, Counter[str]]
"""Seconds, CPU seconds of this process (the machine is shared) and the files opened."""


def timed_open(root: Path, drop: bool) -> Timing:
    if drop:
        drop_caches()
    gc.collect()
    with files_opened_under(root) as opened:
        start, cpu = time.perf_counter(), time.process_time()
        Store.open(root).close()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu, opened


def forget_metadata(root: Path) -> None:
    meta_file = Layout(root).meta_file
    for path in (meta_file, *(meta_file.with_name(meta_file.name + s) for s in ("-wal", "-shm"))):
        path.unlink(missing_ok=True)


def report(label: str, results: list[Timing]) -> None:
    times = [seconds for seconds, _, _ in results]
    cpu = statistics.median(cpu for _, cpu, _ in results)
    opened = results[-1][2]
    shown = ", ".join(f"{name} x{n}" for name, n in opened.most_common(4)) or "none"
    print(
        f"{label:<34} median {statistics.median(times):6.2f} s, CPU {cpu:.2f} s   "
        f"({', '.join(f'{t:.2f}' for t in times)})   load {os.getloadavg()[0]:.1f}\n"
        f"{'':<34} files opened: {sum(opened.values()):,} ({shown})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="the store (built if missing)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--per-run", type=int, default=100)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--drop-caches", action="store_true", help="root only")
    args = parser.parse_args()
    root: Path = args.dir
    if not root.exists():
        print(f"building {args.runs} runs x {args.per_run} checkpoints in {root}")
        write_store(root, args.runs, args.per_run)
    caches = "page cache dropped before each" if args.drop_caches else "page cache warm"
    print(f"store {root}; {args.reps} opens each; {caches}")
    cold = []
    for _ in range(args.reps):
        forget_metadata(root)
        cold.append(timed_open(root, args.drop_caches))
    report("cold (no metadata file)", cold)
    warm = [timed_open(root, args.drop_caches) for _ in range(args.reps)]
    report("warm (metadata, files unchanged)", warm)


if __name__ == "__main__":
    main()
