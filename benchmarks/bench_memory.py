"""Memory across refreshes: the app as `ckpt-tui --local STORE` runs it, refreshed N times.

Run: python benchmarks/bench_memory.py --store STORE [--refreshes 12]

The real app runs headless at 120x36 on a local store (make a 100,000-checkpoint one with
`python benchmarks/bench_server.py --dir DIR`, then use DIR), with the garbage-collector
policy the command turns on (ckpt_tui.heap). After the first load and after each refresh
(`r`) it prints the process's resident memory and how many objects the garbage collector
tracks (frozen or not). Flat figures mean nothing leaks per refresh.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import time
from pathlib import Path

from ckpt_tui.client import Backend
from ckpt_tui.heap import manage_heap
from ckpt_tui.loader import LogDirSettings
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


async def measure(store: Path, refreshes: int) -> None:
    app = CkptApp(Backend.local(store), LogDirSettings((), None), poll_interval=0)
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
            tracked = gc.get_freeze_count() + len(gc.get_objects())
            memory = f"{resident_mib():7.1f} MiB resident, {tracked:,} objects tracked"
            print(f"{what}: {memory} ({seconds:.1f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--refreshes", type=int, default=12)
    args = parser.parse_args()
    manage_heap()  # as the `ckpt-tui` command does
    asyncio.run(measure(args.store, args.refreshes))


if __name__ == "__main__":
    main()
