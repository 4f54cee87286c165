"""The app over four backends of 25,000 checkpoints each, against one backend of 100,000.

    python benchmarks/bench_fleet.py [--dir DIR] [--latency 0.05] [--rounds 2] [--reps 15]

Builds (in DIR, reused when it is there; else a temporary folder) four stores of 25,000
checkpoints and one of 100,000, serves each with `ckpt-tui serve` in its own process behind
a proxy on loopback that holds every request `--latency` seconds (bench_ls.py's pieces), and
runs the real app headless at 120x36 in the all-checkpoints view, once on the four and once
on the one, `--rounds` times, alternating. For each it prints, in ms (medians over rounds):
- first frame: from the app starting its loads to the first frame that shows rows;
- complete: to the frame showing every backend's whole list (and the header's totals);
- down / pagedown / filter / sort: a keystroke to the next painted frame, once complete.
Targets: the four backends complete no later than the one backend of the same total size,
and a keystroke stays under 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_ls import LOOPBACK, default_ckpt_tui, proxy_process, served
from bench_server import write_store
from bench_tui import FrameClock, keystrokes
from textual.geometry import Region
from textual.strip import Strip

from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli.common import connection_to
from ckpt_tui.client import Endpoint
from ckpt_tui.store import Store
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.widgets.fast_table import FastTable

PER_RUN = 100
SETUPS = {"four": 4, "one": 1}
"""How many backends share the same total of checkpoints (`--total`, 100,000)."""


def built(root: Path, name: str, count: int) -> Path:
    """A store of `count` checkpoints under `root`, built and indexed once, then reused."""
    folder = root / name
    done = folder / ".bench-built"
    if not done.exists():
        print(f"building {folder} ({count:,} checkpoints)…", flush=True)
        write_store(folder, count // PER_RUN, PER_RUN)
        Store.open(folder).close()  # the first open indexes it
        done.write_text(f"{count}\n")
    return folder


@contextmanager
def proxied(stores: list[Path], ckpt_tui: str, latency: float) -> Iterator[list[str]]:
    """Each store served in its own process behind its own latency proxy, also in a process
    of its own (in the app's process, four proxies' threads took CPU and the interpreter lock
    from the app being measured, which a network does not); their URLs."""
    with ExitStack() as stack:
        urls = []
        for store in stores:
            port = stack.enter_context(served(store, ckpt_tui))
            proxy_port = stack.enter_context(proxy_process(port, latency))
            urls.append(f"http://{LOOPBACK}:{proxy_port}")
        yield urls


class Paints:
    """Each frame the checkpoint table paints in the all-checkpoints view, as it is painted:
    when, how many rows, and whether every backend was whole then. Pilot's `press` waits
    until the app is idle, so frames are stamped where they are painted, not by a loop that
    the key press holds up."""

    frames: ClassVar[list[tuple[float, int, bool]]] = []


painted_lines = FastTable.render_lines


def stamped_render_lines(table: FastTable[object], crop: Region) -> list[Strip]:
    lines = painted_lines(table, crop)
    screen = table.screen
    shown = isinstance(screen, BrowseScreen) and screen.state.view == "all"
    if shown and table.id == "checkpoints":
        assert isinstance(screen, BrowseScreen)
        Paints.frames.append((time.perf_counter(), len(table.rows), screen.fleet.complete))
    return lines


FastTable.render_lines = stamped_render_lines  # type: ignore[method-assign,assignment]


async def measure(urls: list[str], reps: int, total: int) -> dict[str, float]:
    """One app on `urls` (one backend each): first frame, complete view, keystrokes."""
    FrameClock.reset()
    Paints.frames = []
    connections = [
        connection_to(Endpoint.remote(url), f"box{number}") for number, url in enumerate(urls, 1)
    ]
    app = CkptApp(connections, LogDirSettings((), None), poll_interval=0, log_check_interval=3600)
    started = 0.0
    original_load = BrowseScreen.load

    def timed_load(screen: BrowseScreen) -> None:
        nonlocal started
        started = time.perf_counter()
        original_load(screen)

    setattr(BrowseScreen, "load", timed_load)  # noqa: B010 - a timing hook, undone below
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            screen = app.screen
            assert isinstance(screen, BrowseScreen)
            await pilot.press("2")  # every backend's checkpoints in one table
            first, complete = await watch_frames(started, total)
            await app.workers.wait_for_complete()  # the sorting ahead of the keys
            keys = await keystrokes(pilot, reps)
    finally:
        setattr(BrowseScreen, "load", original_load)  # noqa: B010
    return {"first frame": first, "complete": complete, **keys}


async def watch_frames(started: float, total: int) -> tuple[float, float]:
    """Milliseconds from `started` to the first frame that shows rows, and to the first frame
    that shows all `total` rows with every backend whole."""
    deadline = time.perf_counter() + 300
    while time.perf_counter() < deadline:
        frames = Paints.frames
        shown = [at for at, rows, _whole in frames if rows]
        whole = [at for at, rows, complete in frames if rows == total and complete]
        if shown and whole:
            return (shown[0] - started) * 1000, (whole[0] - started) * 1000
        await asyncio.sleep(0.01)
    raise SystemExit(f"not complete after 5 minutes: {Paints.frames[-1:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dir", type=Path, help="where the stores are built (and reused)")
    parser.add_argument("--ckpt-tui", default=default_ckpt_tui(), help="the server to run")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--total", type=int, default=100_000, help="checkpoints in all")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as scratch:
        root = args.dir or Path(scratch)
        stores = {
            setup: [built(root, f"{setup}-{n}", args.total // count) for n in range(count)]
            for setup, count in SETUPS.items()
        }
        results: dict[str, list[dict[str, float]]] = {setup: [] for setup in SETUPS}
        with ExitStack() as stack:
            urls = {
                setup: stack.enter_context(proxied(folders, args.ckpt_tui, args.latency))
                for setup, folders in stores.items()
            }
            for _ in range(args.rounds):  # alternating, so load on the machine hits both alike
                for setup in SETUPS:
                    measured = asyncio.run(measure(urls[setup], args.reps, args.total))
                    results[setup].append(measured)
    report(results, args.latency, args.total)


def report(results: dict[str, list[dict[str, float]]], latency: float, total: int) -> None:
    rounds = len(results["four"])
    print(f"{rounds} rounds, {latency * 1000:.0f} ms per request; ms, medians over rounds")
    names = list(results["four"][0])
    print(f"{'backends':<22}" + "".join(f"{name:>13}" for name in names))
    medians = {}
    for setup, label in (("four", f"4 x {total // 4:,}"), ("one", f"1 x {total:,}")):
        medians[setup] = {
            name: statistics.median(r[name] for r in results[setup]) for name in names
        }
        print(f"{label:<22}" + "".join(f"{medians[setup][name]:>13.1f}" for name in names))
    for setup in ("four", "one"):
        each = ", ".join(f"{r['complete']:.0f}" for r in results[setup])
        print(f"complete, each round ({setup}): {each}")
    ratio = medians["four"]["complete"] / medians["one"]["complete"]
    print(f"complete, 4 backends / 1 backend: {ratio:.2f} (target <= 1)")


if __name__ == "__main__":
    main()
