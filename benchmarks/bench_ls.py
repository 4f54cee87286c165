"""`ckpt-tui ls --json` against the official `tinker` CLI over a 100,000-checkpoint store.

    python benchmarks/bench_ls.py --store DIR [--tinker VENV] [--compare CKPT_TUI] [--reps 3]

Serves the store with `ckpt-tui serve` in another process, behind a proxy on loopback that
holds every request 50 ms (`--latency`) before passing it on, as a distant server would. After
one untimed `ckpt-tui ls --json` (the server's first listing builds its caches), runs, one
after the other and `--reps` times each:
- `ckpt-tui ls --json --url PROXY` (this checkout's, or `--ckpt-tui PATH`);
- with `--compare PATH`, another `ckpt-tui` executable the same way (e.g. an older version);
- with `--tinker VENV`, the official `tinker -f json checkpoint list --limit 0` from that
  virtualenv (e.g. /work/tinkervenv).
Prints each one's median wall time and peak resident memory (its own process's VmHWM),
the ratios, and whether each printed one JSON document naming every checkpoint. Targets:
ckpt-tui at least 10x faster than the tinker CLI, peak RSS under 150 MB.

Make a store with `python benchmarks/bench_server.py --dir DIR --runs 1000 --per-run 100`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path

LOOPBACK = "127.0.0.1"


class LatencyProxy:
    """A TCP proxy on loopback that delays each chunk a client sends by `latency` seconds.

    A request is one chunk, so each request waits `latency` once; answers pass at once, and
    requests on different connections wait side by side, as over a long link.
    """

    def __init__(self, upstream_port: int, latency: float) -> None:
        self.upstream_port = upstream_port
        self.latency = latency
        self.port = 0
        self.deletes_from: float | None = None
        """When the first DELETE came (perf_counter), and when the last answer after it left."""
        self.answered_at: float | None = None
        self._server: asyncio.Server | None = None
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LatencyProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, LOOPBACK, 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _connection(
        self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(LOOPBACK, self.upstream_port)
        except OSError:
            client_w.close()
            return
        try:
            await asyncio.gather(
                self._pipe(client_r, server_w, self.latency),
                self._pipe(server_r, client_w, 0.0),
                return_exceptions=True,
            )
        except asyncio.CancelledError:
            # closing the proxy: end quietly (asyncio logs a connection task that was cancelled)
            return

    def asked(self, data: bytes) -> None:
        """A chunk a client sent (a request, or part of one)."""
        if self.deletes_from is None and data.startswith(b"DELETE "):
            self.deletes_from = time.perf_counter()

    def answered(self) -> None:
        """A chunk of an answer went back."""
        if self.deletes_from is not None:
            self.answered_at = time.perf_counter()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float
    ) -> None:
        """Client to server (delayed) or server to client."""
        try:
            while data := await reader.read(1 << 16):
                if delay:
                    self.asked(data)
                else:
                    self.answered()
                if delay:
                    await asyncio.sleep(delay)
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()


def _proxy_child(upstream_port: int, latency: float, ports: Connection, stop: Event) -> None:
    """A child process's body: one LatencyProxy until `stop` is set."""
    with LatencyProxy(upstream_port, latency) as proxy:
        ports.send(proxy.port)
        stop.wait()


@contextmanager
def proxy_process(upstream_port: int, latency: float) -> Iterator[int]:
    """A LatencyProxy in a process of its own; yields its port. For a benchmark that runs
    the app in its own process: a proxy stands for the network, which takes no CPU (nor the
    interpreter lock) from the app it measures."""
    context = multiprocessing.get_context("spawn")
    here, there = context.Pipe()
    stop = context.Event()
    child = context.Process(target=_proxy_child, args=(upstream_port, latency, there, stop))
    child.start()
    try:
        if not here.poll(30):
            raise SystemExit("the latency proxy did not start within 30 s")
        yield int(here.recv())
    finally:
        stop.set()
        child.join(10)
        if child.is_alive():
            child.kill()


@contextmanager
def served(store: Path, ckpt_tui: str) -> Iterator[int]:
    """`ckpt-tui serve STORE` on a free loopback port, in its own process; yields the port."""
    process = subprocess.Popen(
        [ckpt_tui, "serve", str(store), "--host", LOOPBACK, "--port", "0", "--api-key", ""],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once the store is open and the port bound
        if "serving http://" not in line:
            raise SystemExit(f"ckpt-tui serve did not start: {line!r}")
        yield int(line.split("serving http://", 1)[1].split()[0].rsplit(":", 1)[1])
    finally:
        process.terminate()
        process.wait(30)


@dataclass
class RunResult:
    seconds: float
    peak_mib: float
    output: Path


def run_once(argv: list[str], env: dict[str, str], output: Path) -> RunResult:
    """Run `argv` with its output to a file; its wall time and peak resident memory.

    The peak is the child's own VmHWM, sampled while it runs: `ru_maxrss` from wait4 would
    also count this process's peak, which a vforked child inherits until it execs.
    """
    with output.open("wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=env)
        status = Path(f"/proc/{process.pid}/status")
        peak_kib = 0
        while process.poll() is None:
            peak_kib = max(peak_kib, high_water_kib(status))
            time.sleep(0.01)
        seconds = time.perf_counter() - start
    assert process.stderr is not None
    errors = process.stderr.read().decode(errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({process.returncode}): {errors[-2000:]}")
    return RunResult(seconds, peak_kib / 1024, output)


def high_water_kib(status: Path) -> int:
    """VmHWM of a running process (0 once it has gone)."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def count_checkpoints(output: Path) -> int | None:
    """Checkpoints in `ls --json` (its runs' checkpoints) or in tinker's list (`checkpoints`);
    None if the output is not one JSON document."""
    try:
        document = json.loads(output.read_bytes())
    except ValueError:
        return None
    if isinstance(document, dict) and "runs" in document:
        return sum(len(run["checkpoints"]) for run in document["runs"])
    if isinstance(document, dict) and "checkpoints" in document:
        return len(document["checkpoints"])
    return None


def default_ckpt_tui() -> str:
    return str(Path(sys.executable).with_name("ckpt-tui"))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--tinker", type=Path, help="a virtualenv with the official tinker CLI")
    parser.add_argument("--ckpt-tui", default=default_ckpt_tui(), help="the ckpt-tui to time")
    parser.add_argument("--compare", help="another ckpt-tui executable to time the same way")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-ls-") as home:
        # No credentials, runs root or storage rate of the person running it.
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,
            "TINKER_COOKBOOK_RUNS_DIR": str(Path(home) / "no-runs"),
        }
        with served(args.store, args.ckpt_tui) as port, LatencyProxy(port, args.latency) as proxy:
            url = f"http://{LOOPBACK}:{proxy.port}"
            commands = {"ckpt-tui ls --json": [args.ckpt_tui, "ls", "--json", "--url", url]}
            if args.compare:
                commands["compared ls --json"] = [args.compare, "ls", "--json", "--url", url]
            if args.tinker:
                tinker = str(args.tinker / "bin" / "tinker")
                commands["tinker checkpoint list"] = [
                    tinker, "-f", "json", "checkpoint", "list", "--limit", "0"
                ]  # fmt: skip
            # The same server through the same proxy: ckpt-tui by --url (no Tinker variables,
            # which would add the hosted service as a second backend), tinker by its variables.
            tinker_env = {**env, "TINKER_BASE_URL": url, "TINKER_API_KEY": "tml-bench"}
            results: dict[str, list[RunResult]] = {name: [] for name in commands}
            # Untimed, first: the server builds its API objects and their JSON on the first
            # listing, which would otherwise land on whichever command runs first.
            run_once(commands["ckpt-tui ls --json"], env, Path(home) / "warm-up.json")
            for rep in range(args.reps):  # interleaved, so load on the machine hits each alike
                for number, (name, argv) in enumerate(commands.items()):
                    output = Path(home) / f"output-{rep}-{number}.json"
                    uses = tinker_env if name == "tinker checkpoint list" else env
                    results[name].append(run_once(argv, uses, output))
        report(results, args.latency)  # reads the outputs only now, to stay small meanwhile


def report(results: dict[str, list[RunResult]], latency: float) -> None:
    print(f"{len(next(iter(results.values())))} runs each, {latency * 1000:.0f} ms per request")
    medians: dict[str, float] = {}
    for name, runs in results.items():
        medians[name] = statistics.median(run.seconds for run in runs)
        peak = statistics.median(run.peak_mib for run in runs)
        counts = [count_checkpoints(run.output) for run in runs]
        listed = ", ".join("not one JSON document" if n is None else f"{n:,}" for n in counts)
        times = ", ".join(f"{run.seconds:.2f}" for run in runs)
        print(
            f"{name:<24} median {medians[name]:7.2f} s  peak RSS {peak:6.0f} MiB  "
            f"({times} s; checkpoints listed: {listed})"
        )
    ours = medians["ckpt-tui ls --json"]
    for name, seconds in medians.items():
        if name != "ckpt-tui ls --json":
            print(f"{name} / ckpt-tui ls --json: {seconds / ours:.1f}x")


if __name__ == "__main__":
    main()
