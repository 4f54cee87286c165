"""How fluid the app is with 1k, 10k and 100k checkpoints: first frame, keys, filter, sort.

Run: python benchmarks/bench_tui.py [--reps 15] [--sizes 1000,10000,100000]

The real app runs headless at 120x36 on an empty local store; a synthetic snapshot of N
checkpoints (100 per run, every 7th with no server size, so estimates are in play) then
"arrives" as it would from the client. A frame counts as painted when the checkpoint table's
`render_lines` batch has finished after the action being timed. Figures are medians in ms.

- first page: the first page of 1,000 arriving (pages then keep coming, one every 10 ms, as
  from 16 requests in flight) -> the first frame showing rows
- last page: the last page arriving -> the frame showing the complete, joined view
- load stall: the longest time the event loop was blocked (the screen frozen) from the first
  page until the sorting and indexing after the last one had finished
- all at once: every checkpoint arriving in one go -> joined (off the UI thread) -> frame
- down / pagedown: keystroke -> frame, in the all-checkpoints view
- filter: one typed character of a growing filter -> frame (`filter cpu`: the most CPU time,
  in the whole process, a character took to its frame: the machine's load left out)
- sort: `s` (next sort key over every row) -> frame
Targets on this machine, with Python's default garbage collector: first frame within 100 ms
of the first page, the complete view within 500 ms of the last page, a keystroke < 50 ms.
`--gc` also prints how many garbage collections ran and how long they took.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import cast

from textual import events
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip

from ckpt_tui.api_types import Checkpoint, TrainingRun, WeightsInfo
from ckpt_tui.catalog.row_cache import RowCache
from ckpt_tui.catalog.snapshot import LogDirSettings, Snapshot, joined, load_snapshot
from ckpt_tui.cli.allocator import map_big_blocks
from ckpt_tui.cli.common import connection_to
from ckpt_tui.client import CheckpointClient, Endpoint, Listing, Page
from ckpt_tui.client.paging import OnPage
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.training.logdirs import LogDirDiscovery
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse.messages import PagesArrived
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.widgets import FastTable

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
PER_RUN = 100
FILTER_TEXT = "run-00"


class FrameClock:
    """Set when the checkpoint table finishes painting a frame (one per event loop)."""

    painted: asyncio.Event

    @classmethod
    def reset(cls) -> None:
        cls.painted = asyncio.Event()

    @classmethod
    async def since(cls, start: float) -> float:
        await asyncio.wait_for(cls.painted.wait(), 30)
        return (time.perf_counter() - start) * 1000


original_render_lines = FastTable.render_lines


def timed_render_lines(self: FastTable[object], crop: Region) -> list[Strip]:
    lines = original_render_lines(self, crop)
    if self.id == "checkpoints":
        FrameClock.painted.set()
    return lines


FastTable.render_lines = timed_render_lines  # type: ignore[method-assign,assignment]


def synthetic(count: int) -> tuple[list[TrainingRun], list[Checkpoint]]:
    runs, checkpoints = [], []
    for r in range(max(1, count // PER_RUN)):
        run_id = f"run-{r:05d}"
        runs.append(TrainingRun(run_id, "Qwen/Qwen3-8B", "me", True, NOW, lora_rank=32))
        for i in range(PER_RUN):
            kind = ("weights", "training") if i % 2 else ("sampler_weights", "sampler")
            name = f"{i:06d}"
            checkpoints.append(
                Checkpoint(
                    checkpoint_id=f"{kind[0]}/{name}",
                    checkpoint_type=kind[1],  # type: ignore[arg-type]
                    time=NOW - timedelta(minutes=r * PER_RUN + i),
                    tinker_path=f"tinker://{run_id}/{kind[0]}/{name}",
                    size_bytes=None if i % 7 == 0 else 1_000_000 + i * 1000,
                    expires_at=NOW + timedelta(hours=i),
                    user_metadata={"eval_loss": str(1 + i / 100)},
                )
            )
    return runs, checkpoints


async def timed_keys(
    pilot: Pilot[None], keys: list[str], cpu: list[float] | None = None
) -> list[float]:
    """Post each key as the terminal driver would and time it to the next painted frame;
    `cpu` gets the process's CPU time over the same span (ms): what the key costs whatever
    else the machine runs, so near its time on an idle machine.

    (Pilot.press also waits for the whole app to go idle, which adds ~100 ms of its own.)
    """
    times = []
    for key in keys:
        await pilot.pause(0.05)
        FrameClock.painted.clear()
        start, cpu_start = time.perf_counter(), time.process_time()
        character = key if len(key) == 1 else None
        pilot.app.post_message(events.Key(key, character))
        times.append(await FrameClock.since(start))
        if cpu is not None:
            cpu.append((time.process_time() - cpu_start) * 1000)
    return times


PAGE = 1000
PAGE_GAP = 0.01


class PageSource:
    """Stands in for the REST client: hands out pages as the client's pager would."""

    endpoint = Endpoint.remote("http://127.0.0.1:9")  # no project: every run is listed

    def __init__(self, runs: list[TrainingRun], checkpoints: list[Checkpoint]) -> None:
        self.runs, self.checkpoints = runs, checkpoints
        self.first_page_at = self.last_page_at = 0.0

    async def read_all_training_runs(self, project_id: str | None = None) -> Listing[TrainingRun]:
        return Listing(self.runs, complete=True)

    async def read_all_checkpoints(
        self,
        on_page: OnPage[Checkpoint],
        known: Callable[[list[Checkpoint]], list[Checkpoint]] | None = None,
    ) -> Listing[Checkpoint]:
        async for page in self.iter_checkpoint_pages():
            await on_page(
                page if known is None else Page(known(page.items), page.offset, page.total)
            )
        return Listing(self.checkpoints, complete=True)

    async def iter_checkpoint_pages(self) -> AsyncIterator[Page[Checkpoint]]:
        total = len(self.checkpoints)
        for offset in range(0, total, PAGE):
            await asyncio.sleep(PAGE_GAP)
            now = time.perf_counter()
            self.first_page_at = self.first_page_at or now
            self.last_page_at = now
            yield Page(self.checkpoints[offset : offset + PAGE], offset, total)

    async def weights_info(self, ref: Checkpoint) -> WeightsInfo:
        return WeightsInfo("Qwen/Qwen3-8B", True, 32)


async def paged_arrival(screen: BrowseScreen, source: PageSource) -> tuple[float, float]:
    """Milliseconds from the first page to rows on screen, and from the last page to the end."""
    first_shown = asyncio.Event()

    def on_partial(snapshot: Snapshot) -> None:
        FrameClock.painted.clear()
        screen.pages_arrived(PagesArrived(screen.fleet.names[0], snapshot))
        first_shown.set()

    settings = LogDirSettings((), None)
    client = cast(CheckpointClient, source)
    task = asyncio.ensure_future(
        load_snapshot(client, settings, None, on_partial, RowCache(), own_logs_only=False)
    )
    await first_shown.wait()
    first = await FrameClock.since(source.first_page_at)
    snapshot = await task
    FrameClock.painted.clear()
    screen.pages_arrived(PagesArrived(screen.fleet.names[0], snapshot))
    last = await FrameClock.since(source.last_page_at)
    screen.warm_up()  # as the app's loader does after the final snapshot
    await screen.app.workers.wait_for_complete()
    return first, last


class StallMeter:
    """The longest time the event loop could not run (a frozen screen), while it runs."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(0.005)
            self.longest = max(self.longest, (time.perf_counter() - start - 0.005) * 1000)

    def stop(self) -> float:
        self._task.cancel()
        return self.longest


async def measure(count: int, reps: int, store: Path) -> dict[str, float]:
    runs, checkpoints = synthetic(count)
    FrameClock.reset()
    app = CkptApp(
        [connection_to(Endpoint.local(store), "local")],
        LogDirSettings((), None),
        clock=FixedClock(NOW),
        poll_interval=0,
        log_check_interval=3600,
    )
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        screen = app.screen
        assert isinstance(screen, BrowseScreen)
        await pilot.press("2")
        await pilot.pause(0.1)
        FrameClock.painted = asyncio.Event()
        stalls = StallMeter()
        first_page, last_page = await paged_arrival(screen, PageSource(runs, checkpoints))
        load_stall = stalls.stop()
        await pilot.pause(0.2)
        FrameClock.painted.clear()
        start = time.perf_counter()
        snapshot = await joined(runs, checkpoints, LogDirDiscovery([], []), {}, RowCache())
        screen.pages_arrived(PagesArrived(screen.fleet.names[0], snapshot))
        arrival = await FrameClock.since(start)
        screen.warm_up()  # as the app's loader does after the final snapshot
        await app.workers.wait_for_complete()
        keys = await keystrokes(pilot, reps)
    return {
        "first page": first_page,
        "last page": last_page,
        "load stall": load_stall,
        "all at once": arrival,
        **keys,
    }


async def keystrokes(pilot: Pilot[None], reps: int) -> dict[str, float]:
    """Medians (ms) of a keystroke to the next painted frame in the all-checkpoints view:
    down, pagedown, one typed character of a growing filter (and its slowest; and the CPU
    time of its slowest), `s`."""
    down = await timed_keys(pilot, ["down"] * reps)
    page = await timed_keys(pilot, ["pagedown"] * reps)
    await pilot.press("slash")
    typed_cpu: list[float] = []
    typed = await timed_keys(pilot, list(FILTER_TEXT), typed_cpu)
    await pilot.press("escape")
    sort = await timed_keys(pilot, ["s"] * 5)
    return {
        "down": statistics.median(down),
        "pagedown": statistics.median(page),
        "filter": statistics.median(typed),
        "filter max": max(typed),
        "filter cpu": max(typed_cpu),
        "sort": statistics.median(sort),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--gc", action="store_true", help="also report garbage collections")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    collections = CollectionLog() if args.gc else None
    with tempfile.TemporaryDirectory() as folder:
        Store.open(Path(folder) / "store").close()
        map_big_blocks()  # as the app does when it starts
        results = {n: asyncio.run(measure(n, args.reps, Path(folder) / "store")) for n in sizes}
    names = list(next(iter(results.values())))
    print(f"{'rows':>8}  " + "  ".join(f"{name:>10}" for name in names) + "   (ms, medians)")
    for count, figures in results.items():
        print(f"{count:>8,}  " + "  ".join(f"{figures[name]:>10.1f}" for name in names))
    if collections is not None:
        collections.report()


class CollectionLog:
    """Every garbage collection while the benchmark runs: how many, how long, the longest."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._started = 0.0
        gc.callbacks.append(self.on_collection)

    def on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((info["generation"], (time.perf_counter() - self._started) * 1000))

    def report(self) -> None:
        for generation in range(3):
            times = [ms for gen, ms in self.pauses if gen == generation]
            print(
                f"generation {generation} collections: {len(times)}, {sum(times):.0f} ms in all,"
                f" longest {max(times, default=0):.1f} ms"
            )


if __name__ == "__main__":
    main()
