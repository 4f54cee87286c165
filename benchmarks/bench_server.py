"""Benchmark the local server over a large store: build, open, and page latencies.

    python benchmarks/bench_server.py [--dir DIR] [--runs 2000] [--per-run 50] [--samples 30]

Builds (in a temporary folder, or DIR) a store of runs x per-run checkpoints by writing the
folders straight to disk, opens it once so the store reconciles them into its index, then times
a fresh `Store.open` and, over loopback through a real uvicorn server, p50/p95 of
`GET /api/v1/checkpoints?limit=1000` at several offsets and a page of 10,000 (after one first
listing of every checkpoint in such pages, timed), one run's checkpoint list and
`GET /api/v1/training_runs?limit=100`. Targets: open < 10 s, 1000-item page p50 < 50 ms,
a run's list p50 < 10 ms. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.live_server import run_server

EPOCH = 1_700_000_000  # seconds; checkpoint mtimes count up from here


def write_store(root: Path, runs: int, per_run: int) -> None:
    """Lay out runs/<run>/run.json and runs/<run>/weights/<name>/adapter.bin directly."""
    for r in range(runs):
        run_dir = root / "runs" / f"run-{r:05d}"
        (run_dir / "weights").mkdir(parents=True)
        info = {"base_model": "Qwen/Qwen3-8B", "is_lora": True, "lora_rank": 32,
                "created": "2023-11-14T00:00:00Z"}  # fmt: skip
        (run_dir / "run.json").write_text(json.dumps(info))
        for c in range(per_run):
            folder = run_dir / "weights" / f"{c:06d}"
            folder.mkdir()
            (folder / "adapter.bin").write_bytes(b"w" * 64)
            stamp = EPOCH + c * runs + r
            os.utime(folder, (stamp, stamp))


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def latency(client: httpx.Client, path: str, samples: int) -> tuple[float, float]:
    """p50 and p95 in milliseconds of GET `path` (after one warm-up call)."""
    client.get(path).raise_for_status()
    times = [timed(lambda: client.get(path).raise_for_status()) * 1000 for _ in range(samples)]
    quantiles = statistics.quantiles(times, n=20)
    return statistics.median(times), quantiles[18]


def measure_http(store: Store, total: int, samples: int) -> None:
    offsets = sorted({0, total // 2, max(total - 1000, 0)})
    paths = [f"/api/v1/checkpoints?limit=1000&offset={o}" for o in offsets]
    paths += ["/api/v1/checkpoints?limit=10000&offset=0"]  # a page as ckpt-tui asks for it
    paths += ["/api/v1/training_runs/run-00042/checkpoints", "/api/v1/training_runs?limit=100"]
    app = create_app(store, sweep_interval=None)
    with run_server(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        pages = [f"/api/v1/checkpoints?limit=10000&offset={o}" for o in range(0, total, 10_000)]
        first = timed(lambda: [client.get(page).raise_for_status() for page in pages])
        print(f"first listing of all {total:,} in pages of 10,000: {first * 1000:7.0f} ms")
        for path in paths:
            p50, p95 = latency(client, path, samples)
            print(f"GET {path:<52} p50 {p50:8.1f} ms   p95 {p95:8.1f} ms")


def build_and_open(root: Path, runs: int, per_run: int) -> Store:
    """Write the folders, index them with a first open, then time a fresh open."""
    print(f"store: {root}  ({runs} runs x {per_run} = {runs * per_run} checkpoints)")
    print(f"write folders:        {timed(lambda: write_store(root, runs, per_run)):7.2f} s")
    print(f"first open (indexes): {timed(lambda: Store.open(root).close()):7.2f} s")
    start = time.perf_counter()
    store = Store.open(root)
    print(f"open (indexed store): {time.perf_counter() - start:7.2f} s   target < 10 s")
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="build here (must not exist)")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--per-run", type=int, default=50)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ckpt-bench-") as tmp:
        store = build_and_open(args.dir or Path(tmp) / "store", args.runs, args.per_run)
        try:
            measure_http(store, args.runs * args.per_run, args.samples)
        finally:
            store.close()


if __name__ == "__main__":
    main()
