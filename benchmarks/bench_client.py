"""Benchmark loading every checkpoint: concurrent pages (this client) vs one page after another.

    python benchmarks/bench_client.py [--runs 2000] [--per-run 50] [--page-size 1000]
        [--concurrency 16] [--latency 0.05] [--repeats 3] [--dir DIR]

Builds a store of runs x per-run checkpoints (folders written straight to disk, as
bench_server.py does), serves it with a real uvicorn server in a separate process through
tests/support/faulty_app.py with `--latency` seconds added to every request (a distant server), then
times `CheckpointClient.list_all_checkpoints` against a sequential loop over offsets with the
same page size (what `tinker checkpoint list --limit=0` does). One untimed load first warms the
server (its first answers encode every checkpoint once; that cold time is printed too), then
the medians and their ratio; asserts nothing. Target: concurrent at least 5x faster.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import time
from multiprocessing.synchronize import Event
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_server import write_store

from ckpt_tui.api_types import Checkpoint
from ckpt_tui.client import CheckpointClient, Endpoint
from ckpt_tui.client.client import PAGE_CONCURRENCY
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import run_server


def serve(root: Path, latency: float, urls: multiprocessing.Queue[str], stop: Event) -> None:
    """Child process: serve the store through the fault app until `stop` is set."""
    store = Store.open(root)
    app = FaultyApp(create_app(store, sweep_interval=None), delay=latency)
    with run_server(app) as url:
        urls.put(url)
        stop.wait()
    store.close()


async def load_sequentially(client: CheckpointClient, page_size: int) -> list[Checkpoint]:
    """One page after another, as the tinker CLI does."""
    first = await client.list_checkpoints(page_size, 0)
    items, total = list(first.items), first.total
    while len(items) < total:
        page = await client.list_checkpoints(page_size, len(items))
        if not page.items:
            break
        items.extend(page.items)
    return items


async def load_concurrently(
    client: CheckpointClient, page_size: int, concurrency: int
) -> list[Checkpoint]:
    return await client.list_all_checkpoints(page_size, concurrency)


async def time_both(url: str, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    sequential: list[float] = []
    concurrent: list[float] = []
    async with CheckpointClient(Endpoint.remote(url)) as client:
        expected = (await client.list_checkpoints(1, 0)).total
        start = time.perf_counter()
        await load_concurrently(client, args.page_size, args.concurrency)
        print(f"  first load after the server started (cold): {time.perf_counter() - start:.2f} s")
        for _ in range(args.repeats):
            start = time.perf_counter()
            got = await load_concurrently(client, args.page_size, args.concurrency)
            concurrent.append(time.perf_counter() - start)
            assert len(got) == expected, (len(got), expected)
            start = time.perf_counter()
            got = await load_sequentially(client, args.page_size)
            sequential.append(time.perf_counter() - start)
            assert len(got) == expected, (len(got), expected)
    return sequential, concurrent


def build(root: Path, runs: int, per_run: int) -> None:
    start = time.perf_counter()
    write_store(root, runs, per_run)
    Store.open(root).close()  # the first open indexes the folders
    print(f"built {runs * per_run} checkpoints in {time.perf_counter() - start:.1f} s")


def report(args: argparse.Namespace, sequential: list[float], concurrent: list[float]) -> None:
    seq, conc = statistics.median(sequential), statistics.median(concurrent)
    print(
        f"{args.runs * args.per_run} checkpoints, page size {args.page_size}, "
        f"+{args.latency * 1000:.0f} ms per request, {args.repeats} runs"
    )
    print(f"  sequential pages (tinker CLI):  median {seq:7.2f} s   {_runs(sequential)}")
    print(
        f"  concurrent pages (x{args.concurrency}):       "
        f"median {conc:7.2f} s   {_runs(concurrent)}"
    )
    print(f"  speed-up: {seq / conc:.1f}x   (target >= 5x)")


def _runs(times: list[float]) -> str:
    return "[" + ", ".join(f"{t:.2f}" for t in times) + "]"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--per-run", type=int, default=50)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=PAGE_CONCURRENCY)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="reuse a store built here before")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ckpt-bench-client-") as tmp:
        root = args.dir or Path(tmp) / "store"
        if not root.exists():
            build(root, args.runs, args.per_run)
        urls: multiprocessing.Queue[str] = multiprocessing.Queue()
        stop = multiprocessing.Event()
        server = multiprocessing.Process(target=serve, args=(root, args.latency, urls, stop))
        server.start()
        try:
            sequential, concurrent = asyncio.run(time_both(urls.get(timeout=120), args))
        finally:
            stop.set()
            server.join(60)
        report(args, sequential, concurrent)


if __name__ == "__main__":
    main()
