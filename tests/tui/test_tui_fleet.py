"""The app over several backends at once: two `ckpt-tui serve` servers with different keys, a
`--local` training-box folder, and a URL where nothing listens.

Every server is real (uvicorn on a free loopback port; the failing one behind a FaultyApp),
keys are pressed as a person types them, and the servers' states are checked afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ckpt_tui.backends.fleet_view import row_key
from ckpt_tui.catalog.partial_views import PartialSpacing
from ckpt_tui.client import Endpoint
from ckpt_tui.server import params
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse import snapshot_feed
from ckpt_tui.tui.view.groups import BackendGroup
from tests.support.demo_fixture import ServedDemo, served_demo
from tests.support.faulty_app import FaultyApp
from tests.support.layouts import hf_trainer_output
from tests.support.tui import (
    app_on,
    backend_error,
    checkpoints,
    connection,
    runs_pane,
    screen_line,
    screen_of,
    screen_text,
    settle,
    shown,
    shows_path,
)
from tests.support.waiting import until

KEYS = {"box1": "tml-box-one", "box2": "tml-box-two"}


@dataclass
class Fleet:
    """What the app is opened on, and the handles to check each backend's state."""

    box1: ServedDemo
    box2: ServedDemo
    faulty: FaultyApp
    """In front of box2's server."""
    scratch: Path
    """The training box's folder, opened with --local."""
    dead_url: str

    def app(self, clock: FixedClock, readonly: tuple[str, ...] = (), **options: object) -> CkptApp:
        def keyed(name: str, url: str) -> Any:
            backend = Endpoint.remote(url, KEYS[name], "test key")
            return connection(backend, name, readonly=name in readonly)

        return app_on(
            [
                keyed("box1", self.box1.url),
                keyed("box2", self.box2.url),
                connection(Endpoint.local(self.scratch), "scratch", readonly="scratch" in readonly),
                connection(self.dead_url, "dead"),
            ],
            self.box1.paths.logs,
            clock,
            **options,
        )


@pytest.fixture
def fleet(tmp_path: Path, clock: FixedClock, refused_url: str) -> Iterator[Fleet]:
    holder: list[FaultyApp] = []

    def wrap(app: Any) -> FaultyApp:
        holder.append(FaultyApp(app))
        return holder[0]

    scratch = hf_trainer_output(tmp_path / "scratch" / "trainer-out").parent
    with (
        served_demo(tmp_path / "one", clock, api_key=KEYS["box1"]) as box1,
        served_demo(tmp_path / "two", clock, wrap=wrap, api_key=KEYS["box2"]) as box2,
    ):
        yield Fleet(box1, box2, holder[0], scratch, refused_url)


def pane_lines(app: CkptApp) -> list[str]:
    """The runs pane as names: 'box1' for a backend's row, 'box1 run' for a run."""
    lines = []
    for entry in runs_pane(app).rows:
        if isinstance(entry, BackendGroup):
            lines.append(entry.backend)
        else:
            lines.append(f"{entry.backend} {entry.display_name}")
    return lines


def header(app: CkptApp) -> str:
    return str(screen_of(app).query_one("#header-line").render())


async def test_each_backend_loads_on_its_own_and_r_retries_the_failed_one(
    fleet: Fleet, clock: FixedClock
) -> None:
    fleet.faulty.fail_first(1, status=401, path="/api/v1/training_runs")  # box2, once
    app = fleet.app(clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert backend_error(app, "box2") is not None
        error = backend_error(app, "dead")
        assert error is not None and "connection refused" in error
        assert "box1 ✓" in header(app) and "scratch ✓" in header(app)
        assert "box2 ✗" in header(app) and "dead ✗" in header(app)
        lines = pane_lines(app)
        assert lines[0] == "box1" and "box1 sl/llama-8b-tulu3" in lines
        assert lines.index("scratch") < lines.index("scratch trainer-out") < lines.index("dead")
        assert not any(line.startswith("box2 ") for line in lines)  # failed: no runs yet
        assert "r retries" in screen_text(app)
        await pilot.press("r")
        await settle(pilot)
        assert backend_error(app, "box2") is None and "box2 ✓" in header(app)
        assert "box2 sl/llama-8b-tulu3" in pane_lines(app)
        assert backend_error(app, "dead") is not None  # nothing listens there still
        totals = screen_of(app).fleet.total()
        box1 = screen_of(app).fleet.totals()["box1"]
        assert totals.checkpoints == 2 * box1.checkpoints + 2  # two demos and two saves
        assert f"{totals.checkpoints:,} checkpoints" in header(app)


async def test_the_view_shows_whole_while_a_backend_still_measures_its_latency(
    fleet: Fleet, clock: FixedClock
) -> None:
    """A load ends with its list: the one small request that measures the backend's latency
    for the header comes after it, and the whole view (with the sorting ahead of the keys)
    does not wait for that answer, however slow it is."""
    gate = fleet.faulty.hold(method="GET", query="limit=1&offset=0")  # box2's latency check
    app = fleet.app(clock)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = screen_of(app)
        try:
            await until(lambda: fleet.faulty.held == 1, pilot.pause)
            await until(lambda: not screen.fetching and screen.whole_shown, pilot.pause)
            assert screen.fleet.state("box2").latency is None  # its answer is still held
            assert "box2 ✓" in header(app)
            assert "box2 sl/llama-8b-tulu3" in pane_lines(app)
        finally:
            gate.set()
        await settle(pilot)
        assert screen.fleet.state("box2").latency is not None


class EveryPageAView(PartialSpacing):
    """A spacing under which every page that is not the last makes a partial view."""

    def claim(self) -> bool:
        return True


async def test_a_backend_is_read_while_its_store_id_is_asked_and_shown_once_compared(
    fleet: Fleet, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With several backends, the health check that says a backend's store id and its list
    go out side by side (reading writes nothing), so no load waits a round trip for the id;
    but none of its rows shows until the id has been compared with the other backends'.
    The servers serve pages of 5 and every page makes a partial view, so box2 makes views
    while its check is held."""
    monkeypatch.setattr(params, "MAX_LIMIT", 5)
    monkeypatch.setattr(snapshot_feed, "PartialSpacing", EveryPageAView)
    gate = fleet.faulty.hold(method="GET", path="/api/v1/healthz")  # box2's store id
    # Two of box2's pages wait, so that one can come after its runs and not be the last.
    pages = [fleet.faulty.hold(method="GET", query=f"limit=5&offset={n}") for n in (5, 10)]
    app = fleet.app(clock)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = screen_of(app)

        def box2_has(missing: int) -> bool:
            loaded, total = screen.feed.progress.get("box2", (0, 0))
            return total > 0 and loaded == total - missing

        try:
            # box2's list comes in, page by page, while its health check is held
            await until(lambda: fleet.faulty.held == 3 and box2_has(10), pilot.pause)
            await until(
                lambda: fleet.faulty.count("GET", "/api/v1/training_runs") >= 2, pilot.pause
            )
            await pilot.pause(0.2)  # the runs' answers: a page after them makes a view
            pages[0].set()
            await until(lambda: box2_has(5), pilot.pause)
            await until(lambda: "box1 ✓" in header(app) and "scratch ✓" in header(app), pilot.pause)
            await pilot.pause(0.5)  # time for a view made of box2's pages to be shown
            assert "box2" in screen.fetching
            assert not any(line.startswith("box2 ") for line in pane_lines(app))
        finally:
            for held in (gate, *pages):
                held.set()
        await settle(pilot)
        assert "box2 ✓" in header(app)
        assert "box2 sl/llama-8b-tulu3" in pane_lines(app)


async def test_a_backend_whose_list_is_held_does_not_hold_back_the_others_rows(
    fleet: Fleet, clock: FixedClock
) -> None:
    """Backends whose lists end while another's is still out are shown before it ends (the
    panes wait at most WORTH_A_VIEW for lists that end together)."""
    gate = fleet.faulty.hold(method="GET", path="/api/v1/checkpoints")  # box2's list
    app = fleet.app(clock)
    async with app.run_test(size=(160, 40)) as pilot:
        try:
            await until(lambda: fleet.faulty.held == 1, pilot.pause)
            await until(
                lambda: (
                    "box1 sl/llama-8b-tulu3" in pane_lines(app)
                    and "scratch trainer-out" in pane_lines(app)
                ),
                pilot.pause,
            )
            assert "box2" in screen_of(app).fetching
            assert fleet.faulty.held == 1
        finally:
            gate.set()
        await settle(pilot)
        assert "box2 sl/llama-8b-tulu3" in pane_lines(app)


def runs_asked(fleet: Fleet) -> int:
    """How many pages of runs box2 was asked for."""
    return fleet.faulty.count("GET", "/api/v1/training_runs")


async def test_a_poll_leaves_a_load_that_measures_its_latency_to_finish(
    fleet: Fleet, clock: FixedClock
) -> None:
    """A poll reloads the backends whose last load has ended. One whose list is in but whose
    latency check is still out is not loading any more, and is still left alone: a new load
    would cancel the one that measures."""
    gate = fleet.faulty.hold(method="GET", query="limit=1&offset=0")  # box2's latency check
    app = fleet.app(clock, poll_interval=0.05)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = screen_of(app)
        try:
            await until(lambda: fleet.faulty.held == 1, pilot.pause)
            asked = fleet.faulty.count("GET", "/api/v1/training_runs")
            loads = screen.feed.loads_started
            # polls reload the other backends meanwhile: two rounds of them at least
            await until(lambda: screen.feed.loads_started >= loads + 6, pilot.pause)
            assert "box2" not in screen.fetching
            assert fleet.faulty.count("GET", "/api/v1/training_runs") == asked
            assert fleet.faulty.held == 1
        finally:
            gate.set()


async def test_a_backend_row_folds_with_enter_and_f(fleet: Fleet, clock: FixedClock) -> None:
    app = fleet.app(clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("shift+tab")  # from the checkpoints to the runs pane
        assert app.focused is runs_pane(app)
        await pilot.press("g")  # box1's row, at the top
        await settle(pilot)
        assert {row.backend for row in shown(app)} == {"box1"}  # all of box1's checkpoints
        await pilot.press("enter")
        await settle(pilot)
        lines = pane_lines(app)
        assert lines[:2] == ["box1", "box2"]  # box1's runs folded under its row
        assert "▸ box1" in screen_text(app)
        await pilot.press("f")
        await settle(pilot)
        assert pane_lines(app)[1].startswith("box1 ")


async def test_the_header_fits_80_columns(fleet: Fleet, clock: FixedClock) -> None:
    app = fleet.app(clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = header(app)
        assert len(line) <= 78
        for name in ("box1", "box2", "scratch", "dead"):
            assert name in line
        assert "checkpoints" in line  # the totals stay; the badges give up their latencies


async def test_a_filter_spans_backends_and_finds_one_by_name(
    fleet: Fleet, clock: FixedClock
) -> None:
    app = fleet.app(clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert "backend" in [column.key for column in checkpoints(app).columns]
        assert {row.backend for row in shown(app)} == {"box1", "box2", "scratch"}
        await pilot.press("slash", *"qwen3-4b-chat", "enter")
        await settle(pilot)
        stored = {(row.backend, row.name) for row in shown(app) if not row.is_missing}
        assert stored == {("box1", "final"), ("box2", "final")}
        # The chat run's log names saves its server no longer has: missing on the backends
        # that hold the run, never on the training box, which does not.
        assert {row.backend for row in shown(app) if row.is_missing} == {"box1", "box2"}
        await pilot.press("escape", "slash", *"scratch", "enter")
        await settle(pilot)
        assert sorted(row.name for row in shown(app)) == ["checkpoint-100", "checkpoint-200"]
        assert {row.backend for row in shown(app)} == {"scratch"}
        await pilot.press("escape", "s", "S")  # by size, biggest first: one order for all
        await settle(pilot)
        sizes = [row.size.bytes or 0 for row in shown(app) if not row.is_missing]
        assert sizes == sorted(sizes, reverse=True)
        assert len({row.backend for row in shown(app)}) == 3


async def mark_across_backends(pilot: Any) -> None:
    """Mark the chat run's final saves on both servers and the box's checkpoint-100."""
    await pilot.press("2", "slash", *"qwen3-4b-chat", "enter", "ctrl+a", "escape")
    await pilot.press("slash", *"checkpoint-100", "enter", "ctrl+a", "escape")
    await settle(pilot)


async def test_a_delete_across_three_backends_goes_to_each_owner_and_R_retries_the_failed(
    fleet: Fleet, clock: FixedClock
) -> None:
    app = fleet.app(clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await mark_across_backends(pilot)
        marked = [row for row in screen_of(app).changes.targets()]
        assert sorted({row.backend for row in marked}) == ["box1", "box2", "scratch"]
        assert len(marked) == 5
        fleet.faulty.fail_names({"final"}, status=403)  # box2 refuses its two
        deletes_before = fleet.faulty.count("DELETE")
        await pilot.press("d")
        await pilot.pause()
        # the dialog names each backend it deletes on, with its count and size, each on one
        # line whatever the length of its place (a temp path here)
        for name, count in (("box1", "2 checkpoints"), ("box2", "2 checkpoints")):
            line = screen_line(app, f"on {name}:")
            assert re.search(rf"on {name}: {count}, [^(]+ \(http://127\.0\.0\.1:\d+\)", line)
        line = screen_line(app, "on scratch:")
        shown = re.search(r"on scratch: 1 checkpoint, [^(]+ \(local store (.+?)\)", line)
        assert shown is not None and shows_path(shown[1], str(fleet.scratch))
        await pilot.press(*"delete", "enter")  # risky ones: the word is typed
        await settle(pilot)
        failed = {row_key(row) for row in marked if row.backend == "box2"}
        assert checkpoints(app).marks == failed
        assert not any(fleet.box1.holds(row) for row in marked if row.backend == "box1")
        assert all(fleet.box2.holds(row) for row in marked if row.backend == "box2")
        assert not (fleet.scratch / "trainer-out" / "checkpoint-100").exists()
        assert (fleet.scratch / "trainer-out" / "checkpoint-200").exists()
        last = screen_of(app).changes.last_action
        assert last is not None and last.summary() == "Deleted 3 of 5; 2 failed (box2: 2)"
        summaries = {entry.backend.split()[0]: entry.summary for entry in app.session_log.entries}
        assert summaries == {
            "box1": "Deleted 2 of 2",
            "box2": "Deleted 0 of 2; 2 failed",
            "scratch": "Deleted 1 of 1",
        }
        assert fleet.faulty.count("DELETE") - deletes_before >= 2
        fleet.faulty.clear_faults()
        deletes_before = fleet.faulty.count("DELETE")
        await pilot.press("R")
        await settle(pilot)
        assert not any(fleet.box2.holds(row) for row in marked if row.backend == "box2")
        assert fleet.faulty.count("DELETE") - deletes_before == 2  # only the failed two
        assert checkpoints(app).marks == frozenset()


async def test_a_read_only_backend_refuses_its_part_and_the_rest_goes_once_confirmed(
    fleet: Fleet, clock: FixedClock
) -> None:
    app = fleet.app(clock, readonly=("box1",))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"qwen3-4b-chat", "enter", "ctrl+a", "escape")
        await settle(pilot)
        marked = screen_of(app).changes.targets()
        await pilot.press("d")
        await pilot.pause()
        text = screen_text(app)
        assert "box1 is read-only: its 2 checkpoints stay as they are" in text
        assert "on box2: " in text and "on box1:" not in text
        await pilot.press(*"delete", "enter")
        await settle(pilot)
        assert all(fleet.box1.holds(row) for row in marked if row.backend == "box1")
        assert not any(fleet.box2.holds(row) for row in marked if row.backend == "box2")
