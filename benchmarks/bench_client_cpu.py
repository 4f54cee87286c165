"""The client's CPU time per request in a bulk delete (what the aiohttp transport is for).

    python benchmarks/bench_client_cpu.py [--deletes 2000] [--in-flight 32] [--reps 3]

Writes a store of `--deletes` checkpoints per rep (bench_server.write_store), serves it with
`ckpt-tui serve` in its own process on loopback (no latency: the server answers at once), and
deletes every checkpoint through one `CheckpointClient` with `run_bulk`, `--in-flight` at once
(the client's ceiling too). Prints this process's CPU time (`time.process_time`: the client
only, `serve` is another process) per DELETE, each rep and the median. The CPU time, not the
wall time, is the figure: the machine's other load moves the wall time, much less the CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ls import LOOPBACK, default_ckpt_tui, served
from bench_server import write_store

from ckpt_tui.client import CheckpointClient, Endpoint, run_bulk


async def delete_all(url: str, paths: list[str], in_flight: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of deleting `paths`; SystemExit if any delete failed."""
    async with CheckpointClient(Endpoint.remote(url), max_in_flight=in_flight) as client:
        await client.healthz()  # the start-up is not what is measured
        cpu, wall = time.process_time(), time.perf_counter()
        outcomes = await run_bulk(paths, client.delete_checkpoint, concurrency=in_flight)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    failed = [outcome for outcome in outcomes if not outcome.ok]
    if failed:
        raise SystemExit(f"{len(failed)} deletes failed, e.g. {failed[0]}")
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--deletes", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ckpt-tui", default=default_ckpt_tui(), help="the `serve` to use")
    args = parser.parse_args()
    per_run = 100
    runs = -(-args.deletes // per_run)
    paths = [f"tinker://run-{r:05d}/weights/{c:06d}" for r in range(runs) for c in range(per_run)]
    costs: list[float] = []
    for rep in range(args.reps):
        with tempfile.TemporaryDirectory(prefix="bench-client-cpu-") as tmp:
            write_store(Path(tmp), runs, per_run)
            with served(Path(tmp), args.ckpt_tui) as port:
                url = f"http://{LOOPBACK}:{port}"
                cpu, wall = asyncio.run(delete_all(url, paths, args.in_flight))
        costs.append(cpu / len(paths) * 1000)
        rate = len(paths) / wall
        print(f"  rep {rep + 1}: {costs[-1]:.2f} ms CPU per DELETE, {rate:.0f}/s")
    print(f"median: {statistics.median(costs):.2f} ms CPU per DELETE ({args.in_flight} in flight)")


if __name__ == "__main__":
    main()
