"""Memory across refreshes: the app against a server in another process, refreshed N times.

Run: python benchmarks/bench_memory.py --store STORE [--refreshes 20]

Serves STORE with `ckpt-tui serve` in its own process (make a 100,000-checkpoint store with
`python benchmarks/bench_server.py --dir DIR --runs 1000 --per-run 100`), so the store's own
memory is not counted. The real app runs headless at 120x36 against it, with Python's default
garbage collector. After the first load and after each refresh (`r`) it prints the app
process's resident memory and how many objects the garbage collector tracks. Targets: under
200 MB after the first load at 100,000 checkpoints, and flat (within 10%) over 20 refreshes.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli.allocator import map_big_blocks
from ckpt_tui.cli.common import connection_to
from ckpt_tui.client import Endpoint
from ckpt_tui.tui.app import CkptApp


def resident_mib() -> float:
    """Current resident memory (Linux /proc), else the peak so far."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def served(store: Path) -> Iterator[str]:
    """`ckpt-tui serve STORE` on a free loopback port, in its own process; yields its URL."""
    ckpt_tui = str(Path(sys.executable).with_name("ckpt-tui"))
    argv = [ckpt_tui, "serve", str(store), "--host", "127.0.0.1", "--port", "0", "--api-key", ""]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once the store is open and the port bound
        if "serving http://" not in line:
            raise SystemExit(f"ckpt-tui serve did not start: {line!r}")
        yield "http://" + line.split("serving http://", 1)[1].split()[0]
    finally:
        process.terminate()
        process.wait(30)


async def measure(url: str, refreshes: int) -> list[float]:
    """Resident MiB after the first load and after each refresh."""
    app = CkptApp(
        [connection_to(Endpoint.remote(url), "server")], LogDirSettings((), None), poll_interval=0
    )
    figures = []
    async with app.run_test(size=(120, 36)) as pilot:
        for step in range(refreshes + 1):
            start = time.perf_counter()
            if step:
                await pilot.press("r")
            await pilot.pause(0.2)
            await app.workers.wait_for_complete()
            await pilot.pause(0.2)
            await app.workers.wait_for_complete()
            what = "first load" if step == 0 else f"refresh {step:>2}"
            seconds = time.perf_counter() - start
            figures.append(resident_mib())
            tracked = len(gc.get_objects())
            memory = f"{figures[-1]:7.1f} MiB resident, {tracked:,} objects tracked"
            print(f"{what}: {memory} ({seconds:.1f} s)", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--refreshes", type=int, default=20)
    args = parser.parse_args()
    with served(args.store) as url:
        map_big_blocks()  # as the app does when it starts
        figures = asyncio.run(measure(url, args.refreshes))
    first, after = figures[0], figures[1:] or figures
    print(
        f"first load {first:.0f} MiB; refreshes: min {min(after):.0f}, median "
        f"{statistics.median(after):.0f}, max {max(after):.0f} MiB "
        f"({(max(after) / first - 1) * 100:+.0f}% over the first load at most)"
    )


if __name__ == "__main__":
    main()
