"""Bulk delete: `ckpt-tui prune --yes` against the official `tinker checkpoint delete`, and
what `ckpt-tui serve` sustains on its own.

    python benchmarks/bench_delete.py [--tinker VENV] [--large] [--reps N] [--profile] [--dir DIR]

Builds a store of 1,000 unprotected checkpoints (10 runs; with `--large` also 10,000, 100
runs) and copies it, so every contestant starts from an identical store. Each copy is served
by `ckpt-tui serve` in its own process, behind a loopback proxy holding every request 50 ms
(`--latency`) but for `serve` alone, and, one after the other:
- `ckpt-tui prune --yes --delete-all-unprotected` (and no keep rule) deletes all of it; the
  proxy also times its deleting part (from the first DELETE to the last answer);
- with `--tinker VENV`, the official `tinker checkpoint delete PATH... -y` (32 threads) does;
- `serve` alone, no proxy: this process sends the DELETEs itself, 32 in flight (`--in-flight`),
  and reports deletes per second and `serve`'s CPU time per delete (all its threads, until
  the deleted files are purged too).
`--reps N` runs the three N times, turn about, each on a fresh copy. Prints each run, then
the medians: wall time and deletes per second, prune's rate as a share of `serve` alone's
(the whole command and its deleting part) and its speed against the official CLI's; checks
each store is empty after.
With `--profile`, first runs `Store.delete_checkpoint` over a copy in this process under
cProfile and says where a delete spends its time (SQLite, fsync, the trash, the rescan).
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ls import LOOPBACK, LatencyProxy, default_ckpt_tui, served
from bench_server import EPOCH, write_store

from ckpt_tui.store import Store

PRUNE_ALL = [
    "--delete-all-unprotected",
    "--no-keep-final",
    "--no-keep-flagged-best",
    "--no-keep-resume",
    "--no-keep-published",
    "--yes",
]
BUCKETS = {
    "SQLite (execute, commit)": ("sqlite3", "execute", "commit"),
    "fsync": ("fsync",),
    "rename into the trash": ("rename", "renameat"),
    "removing files (rmtree, unlink)": ("rmtree", "unlink", "rmdir"),
    "rescan (stat, scandir, listdir)": ("stat", "scandir", "listdir"),
}


def age_files(root: Path) -> None:
    """Date every checkpoint file back to `EPOCH`, as a store's files are some time after a
    run: a file changed in the last `SETTLE_SECONDS` marks its run as still being written,
    and such a run is read again at each request (which a fresh store would measure)."""
    for folder, _, files in os.walk(root / "runs"):
        for name in files:
            os.utime(Path(folder) / name, (EPOCH, EPOCH))


def paths_of(store_dir: Path) -> list[str]:
    store = Store.open(store_dir, create=False)
    try:
        checkpoints, total = store.list_checkpoints(0, 1_000_000)
        assert len(checkpoints) == total
        return [c.tinker_path for c in checkpoints]
    finally:
        store.close()


def left_in(store_dir: Path) -> int:
    store = Store.open(store_dir, create=False)
    try:
        return store.list_checkpoints(0, 1)[1]
    finally:
        store.close()


def timed_process(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]!r}")
    return seconds


def children_cpu_seconds() -> float:
    """User and system CPU seconds of this process's live children (the `serve` timed)."""
    spent = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            spent += int(fields[11]) + int(fields[12])  # utime and stime, in clock ticks
    return spent / os.sysconf("SC_CLK_TCK")


def waited_children_cpu_seconds() -> float:
    """User and system CPU seconds of this process's children that ended (the prune timed)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def delete_directly(port: int, paths: list[str], in_flight: int) -> float:
    """DELETE every path over `in_flight` keep-alive connections; the seconds it took.

    A bare HTTP/1.1 client on asyncio streams rather than httpx: on this machine an
    `httpx.AsyncClient` spends 1.6-3.7 ms of CPU per request (it capped this benchmark at
    about 130 requests/s whatever the server did), while this one spends about 0.1 ms, so
    what is measured is the server. Every answer must be 204."""
    queue = [
        "/api/v1/training_runs/{}/checkpoints/{}/{}".format(
            *path.removeprefix("tinker://").split("/", 2)
        )
        for path in reversed(paths)
    ]

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(LOOPBACK, port)
        try:
            while queue:
                target = queue.pop()
                writer.write(f"DELETE {target} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
                status = await reader.readline()
                if b" 204 " not in status:
                    raise SystemExit(f"DELETE {target} answered {status!r}")
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(in_flight)))
    return time.perf_counter() - start


def profile_deletes(store_dir: Path, top: int) -> None:
    """Where `Store.delete_checkpoint` spends its time, in this process."""
    paths = paths_of(store_dir)
    store = Store.open(store_dir, create=False)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for path in paths:
        run_id, checkpoint_id = path.removeprefix("tinker://").split("/", 1)
        store.delete_checkpoint(run_id, checkpoint_id)
    profiler.disable()
    seconds = time.perf_counter() - start
    store.close()
    print(f"\nStore.delete_checkpoint x {len(paths):,} in-process (under cProfile): "
          f"{seconds:.2f} s, {len(paths) / seconds:,.0f}/s")  # fmt: skip
    stats = pstats.Stats(profiler)
    raw = stats.stats  # type: ignore[attr-defined]
    for bucket, words in BUCKETS.items():
        spent = sum(
            entry[2]  # own time
            for (_, _, function), entry in raw.items()
            if any(word in function for word in words)
        )
        print(f"  {bucket:<34} {spent:6.2f} s ({spent / seconds:5.1%})")
    print(f"\nTop {top} by own time:")
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tinker", type=Path, help="a virtualenv with the official tinker CLI")
    parser.add_argument("--ckpt-tui", default=default_ckpt_tui(), help="the ckpt-tui to time")
    parser.add_argument("--large", action="store_true", help="also 10,000 checkpoints")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--in-flight", type=int, default=32, help="for serve alone")
    parser.add_argument("--profile", action="store_true", help="cProfile the store's deletes")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--serve-only", action="store_true", help="only serve alone, no proxy")
    parser.add_argument("--reps", type=int, default=1, help="rounds of each, turn about (medians)")
    parser.add_argument("--dir", type=Path, help="where to build the stores (default: a temp)")
    args = parser.parse_args()
    sizes = [(10, 100), (100, 100)] if args.large else [(10, 100)]
    with tempfile.TemporaryDirectory(prefix="bench-delete-", dir=args.dir) as root:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": root,
            "TINKER_COOKBOOK_RUNS_DIR": str(Path(root) / "no-runs"),
        }
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for runs, per_run in sizes:
            compare(Path(root), runs, per_run, args, env)
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


PRUNE = "ckpt-tui prune --yes (proxy)"
DELETING = "  its deleting part (first DELETE to last answer)"
OFFICIAL = "tinker checkpoint delete -y (proxy)"


def compare(
    root: Path, runs: int, per_run: int, args: argparse.Namespace, env: dict[str, str]
) -> None:
    """Each contestant `--reps` times on fresh copies, turn about (prune, the official CLI,
    `serve` alone, then again), so a machine that slows down meanwhile slows all of them."""
    total = runs * per_run
    template = root / f"template-{total}"
    write_store(template, runs, per_run)
    age_files(template)
    if args.profile:
        profile_deletes(fresh_copy(template, root / f"profile-{total}"), args.top)
    print(f"\n{total:,} checkpoints, {args.latency * 1000:.0f} ms per request through the proxy")
    results: dict[str, list[float]] = {}
    serve_cpu: list[float] = []
    alone_name = f"serve alone, {args.in_flight} in flight (no proxy)"
    for rep in range(args.reps):
        if not args.serve_only:
            prune = fresh_copy(template, root / f"prune-{total}-{rep}")
            prune_through_proxy(prune, args, env, results)
            if args.tinker:
                official = fresh_copy(template, root / f"tinker-{total}-{rep}")
                official_through_proxy(official, args, env, results)
        alone = fresh_copy(template, root / f"serve-{total}-{rep}")
        seconds, cpu, purged = serve_alone(alone, args)
        results.setdefault(alone_name, []).append(seconds)
        serve_cpu.append(cpu)
        print(f"serve alone: {total / seconds:,.0f} deletes/s, {cpu / total * 1000:.3f} ms of CPU "
              f"per delete, files purged {purged:.2f} s after the last answer")  # fmt: skip
    print(f"\nmedians of {args.reps} (each run's rate in brackets):")
    medians = {name: statistics.median(times) for name, times in results.items()}
    for name, times in results.items():
        rates = ", ".join(f"{total / t:,.0f}" for t in times)
        median = medians[name]
        print(f"{name:<50} {median:7.2f} s  {total / median:8,.0f} deletes/s  ({rates})")
    per_delete = statistics.median(serve_cpu) / total * 1000
    print(f"serve's CPU per delete while alone (all threads, with the purges): {per_delete:.3f} ms")
    if PRUNE in medians:
        whole, part = (medians[alone_name] / medians[name] for name in (PRUNE, DELETING))
        print(f"through the proxy, prune's rate is {whole:.0%} of serve alone's (the whole "
              f"command), {part:.0%} (its deleting part)")  # fmt: skip
    if OFFICIAL in medians and PRUNE in medians:
        print(f"ckpt-tui is {medians[OFFICIAL] / medians[PRUNE]:.2f}x the official CLI's speed")


def fresh_copy(template: Path, copy: Path) -> Path:
    """A copy of the template store, indexed after copying: a copy's files have new inodes,
    so the fingerprints of an index made before would count every checkpoint as just changed
    (settling for 10 s)."""
    shutil.copytree(template, copy)
    Store.open(copy).close()
    return copy


def serve_alone(copy: Path, args: argparse.Namespace) -> tuple[float, float, float]:
    """One round of `serve` alone: the seconds until the last answer, `serve`'s CPU seconds
    until its files are purged too (`wait_for_purges`), and the seconds from the last answer
    until then: a delete answers before its files are removed, and stopping the count at the
    last answer would leave out the purges still running."""
    paths = paths_of(copy)
    with served(copy, args.ckpt_tui) as port:
        cpu_before = children_cpu_seconds()
        seconds = asyncio.run(delete_directly(port, paths, args.in_flight))
        answered = time.perf_counter()
        wait_for_purges(copy)
        purged = time.perf_counter() - answered
        cpu = children_cpu_seconds() - cpu_before
    emptied(copy, "serve")
    return seconds, cpu, purged


def emptied(copy: Path, who: str) -> None:
    """Stop the benchmark if `who` left checkpoints behind; else remove the copy."""
    if left := left_in(copy):
        raise SystemExit(f"{who} left {left} checkpoints in {copy}")
    shutil.rmtree(copy)


def wait_for_purges(store_dir: Path, timeout: float = 120.0) -> None:
    """Until no slot of the store's trash holds deleted files."""
    trash = store_dir / ".ckpt-tui" / "trash"
    deadline = time.monotonic() + timeout
    while any((slot / "files").exists() for slot in trash.iterdir()):
        if time.monotonic() > deadline:
            raise SystemExit(f"serve's purges did not finish within {timeout:.0f} s")
        time.sleep(0.02)


def prune_through_proxy(
    copy: Path, args: argparse.Namespace, env: dict[str, str], results: dict[str, list[float]]
) -> None:
    """`ckpt-tui prune --yes` of the whole copy, and the CPU it, `serve` and the proxy used."""
    with served(copy, args.ckpt_tui) as port, LatencyProxy(port, args.latency) as proxy:
        url = f"http://{LOOPBACK}:{proxy.port}"
        argv = [args.ckpt_tui, "prune", "--url", url, *PRUNE_ALL]
        serve_before, proxy_before = children_cpu_seconds(), time.process_time()
        prune_before = waited_children_cpu_seconds()
        seconds = timed_process(argv, env)
        cpu = {
            "prune": waited_children_cpu_seconds() - prune_before,
            "serve": children_cpu_seconds() - serve_before,
            "the proxy": time.process_time() - proxy_before,
        }
    results.setdefault(PRUNE, []).append(seconds)
    spent = ", ".join(f"{name} {used:.2f} s" for name, used in cpu.items())
    line = f"prune: {seconds:.2f} s"
    if proxy.deletes_from is not None and proxy.answered_at is not None:
        # The command's start, listing and plan are not deleting: the rate of its part that
        # deletes is the one to set beside `serve` alone's.
        deleting = proxy.answered_at - proxy.deletes_from
        results.setdefault(DELETING, []).append(deleting)
        line += f", its deleting part {deleting:.2f} s"
    # What the three took of the two cores: the share left for anything else.
    print(f"{line}; CPU meanwhile: {spent}, {sum(cpu.values()):.2f} s in all")
    emptied(copy, "prune")


def official_through_proxy(
    copy: Path, args: argparse.Namespace, env: dict[str, str], results: dict[str, list[float]]
) -> None:
    """The official `tinker checkpoint delete PATH... -y` of the whole copy."""
    paths = paths_of(copy)
    with served(copy, args.ckpt_tui) as port, LatencyProxy(port, args.latency) as proxy:
        url = f"http://{LOOPBACK}:{proxy.port}"
        tinker_env = {**env, "TINKER_BASE_URL": url, "TINKER_API_KEY": "tml-bench"}
        argv = [str(args.tinker / "bin" / "tinker"), "checkpoint", "delete", *paths, "-y"]
        seconds = timed_process(argv, tinker_env)
    results.setdefault(OFFICIAL, []).append(seconds)
    print(f"the official CLI: {seconds:.2f} s")
    emptied(copy, "the official CLI")


if __name__ == "__main__":
    main()
