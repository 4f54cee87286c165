"""The app open while training writes (issue 18): a live run simulator writes folders and logs
step by step, a real server serves the store, and the test presses keys as a person would, then
checks the server's and the disk's state. Time passes only when the test advances the clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog
from tests.support.live_run import LiveRun, TrainerRun
from tests.support.live_server import run_server
from tests.support.tui import checkpoints, make_app, screen_of, screen_text, settle, shown

SETTLE = timedelta(seconds=SETTLE_SECONDS)
WEEK = timedelta(days=7)


@dataclass
class Live:
    """The store, its server, the simulated trainer and the clock they share."""

    store: Store
    url: str
    run: LiveRun
    trainer: TrainerRun
    clock: FixedClock
    logs: Path

    def app(self) -> CkptApp:
        return make_app(self.url, self.logs, self.clock)

    def saved(self, *names: str) -> None:
        """Whole saves the store has seen settle (written, looked at, left alone)."""
        for name in names:
            self.run.train(10)
            self.run.begin(name)
            self.run.finish(name)
        self.store.rescan()
        self.clock.advance(SETTLE)

    def expires(self, path: str) -> object:
        run_id, checkpoint_id = path.removeprefix("tinker://").split("/", 1)
        return self.store.get_checkpoint(run_id, checkpoint_id).expires_at


@pytest.fixture
def live(tmp_path: Path, clock: FixedClock) -> Iterator[Live]:
    store = Store.open(tmp_path / "store", clock)
    store.recheck_interval = 0  # every list looks at the folders: the test decides when
    store.create_run("sim", "Qwen/Qwen3-8B", lora_rank=8)
    logs = tmp_path / "logs"
    run = LiveRun(tmp_path / "store", "sim", logs / "sim")
    trainer = TrainerRun(tmp_path / "store" / "hf")
    try:
        with run_server(create_app(store, sweep_interval=None)) as url:
            yield Live(store, url, run, trainer, clock, logs)
    finally:
        store.close()


@asynccontextmanager
async def newest_first(live: Live) -> AsyncIterator[tuple[CkptApp, Pilot[None]]]:
    """The app on every checkpoint, newest first (keys 2 and S), cursor on the first row."""
    app = live.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2", "S", "g")
        await settle(pilot)
        yield app, pilot


async def refresh(pilot: Pilot[None]) -> None:
    """`r` twice. A refresh reads runs and checkpoint pages side by side, and a list that
    finds the store's folder scan running serves what is known: which request scans depends
    on how the requests interleave. After the first `r` a scan at the clock's time has ended,
    so the second shows it whatever the interleaving."""
    for _ in range(2):
        await pilot.press("r")
        await settle(pilot)


async def cursor_to(pilot: Pilot[None], app: CkptApp, path: str) -> None:
    """Move the cursor onto `path` with keys: to the top, then down."""
    index = [row.tinker_path for row in shown(app)].index(path)
    await pilot.press("g", *["j"] * index)
    await pilot.pause()
    assert cursor_row(app).tinker_path == path


def cursor_row(app: CkptApp) -> CheckpointRow:
    row = checkpoints(app).cursor_value
    assert row is not None
    return row


def row_of(app: CkptApp, path: str) -> CheckpointRow:
    return next(row for row in shown(app) if row.tinker_path == path)


def status_line(app: CkptApp) -> str:
    return str(screen_of(app).query_one("#status-line").render())


async def set_ttl_week(pilot: Pilot[None]) -> None:
    """`t`, then a typed TTL of 7 days (the presets extend, and these never expire)."""
    await pilot.press("t")
    await pilot.pause()
    assert isinstance(pilot.app.screen, TtlDialog)
    await pilot.press(*"7d", "enter")
    await settle(pilot)


async def test_a_save_in_progress_is_shown_refused_then_settles(live: Live) -> None:
    live.saved("000010")
    live.run.begin("000020")
    path = live.run.tinker_path("000020")
    async with newest_first(live) as (app, pilot):
        top = cursor_row(app)
        assert top.tinker_path == path and top.incomplete and "incomplete" in top.flags()
        assert top.size.kind == "partial" and top.size.bytes == 100
        assert "≥ 100 Bytes (still being written)" in screen_text(app)
        await set_ttl_week(pilot)
        assert live.expires(path) is None  # the server refused it
        live.run.grow("000020")
        await refresh(pilot)
        assert cursor_row(app).size.bytes == 200  # the size catches up
        live.run.finish("000020")
        await refresh(pilot)
        assert cursor_row(app).incomplete  # whole, but its files just changed
        live.clock.advance(SETTLE)
        await refresh(pilot)
        done = cursor_row(app)
        assert not done.incomplete and done.size.is_exact
        assert done.size.bytes == live.run.size_on_disk("000020")
        await set_ttl_week(pilot)
        assert live.expires(path) == live.clock.now() + WEEK


async def test_the_keep_policy_dialog_never_plans_a_save_in_progress(live: Live) -> None:
    live.saved("000010", "000020", "000030")
    live.run.begin("000040")
    async with newest_first(live) as (app, pilot):
        await pilot.press("K")
        await pilot.pause()
        for _ in range(5):  # to the "Keep last" box, from wherever the dialog put the focus
            if getattr(app.focused, "id", None) == "kp-last":
                break
            await pilot.press("tab")
        assert getattr(app.focused, "id", None) == "kp-last"
        await pilot.press("1")
        for _ in range(20):
            if getattr(app.focused, "id", None) == "kp-delete":
                break
            await pilot.press("tab")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)
        await pilot.press("y")
        await settle(pilot)
    run = live.run
    assert not run.folder("000010").exists() and not run.folder("000020").exists()
    assert run.folder("000030").is_dir()  # last 1 (and the resume point)
    assert run.folder("000040").is_dir()  # still being written: kept
    left = {c.checkpoint_id for c in live.store.list_run_checkpoints("sim")}
    assert left == {"weights/000030", "weights/000040"}


async def test_an_hf_checkpoint_keeps_its_id_and_mark_while_optimizer_lands(live: Live) -> None:
    live.trainer.model(150)
    path = "tinker://hf/weights/checkpoint-150"
    async with newest_first(live) as (app, pilot):
        await cursor_to(pilot, app, path)
        assert cursor_row(app).incomplete
        await pilot.press("space")
        live.trainer.optimizer(150)
        await refresh(pilot)
        live.trainer.trainer_state(150, 0.7)
        await refresh(pilot)
        live.clock.advance(SETTLE)
        await refresh(pilot)
        assert checkpoints(app).marks == {("demo", path)}
        assert not row_of(app, path).incomplete and row_of(app, path).resume_point
        await set_ttl_week(pilot)
    assert live.expires(path) == live.clock.now() + WEEK


async def test_marks_on_checkpoints_the_trainer_deleted_are_dropped(live: Live) -> None:
    live.saved("000010")
    live.run.begin("000011")
    live.run.finish("000011", {"rolling": True})
    live.store.rescan()
    live.clock.advance(SETTLE)
    rolling, kept = live.run.tinker_path("000011"), live.run.tinker_path("000010")
    async with newest_first(live) as (app, pilot):
        await cursor_to(pilot, app, rolling)
        await pilot.press("space")
        live.run.delete("000011")  # superseded: the trainer deletes it
        await refresh(pilot)
        assert checkpoints(app).marks == set() and row_of(app, rolling).is_missing
        assert "1 marked checkpoint no longer stored: unmarked" in status_line(app)
        await cursor_to(pilot, app, kept)
        await set_ttl_week(pilot)
        assert live.expires(kept) == live.clock.now() + WEEK
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)
        await pilot.press("y")
        await settle(pilot)
    assert not live.run.folder("000010").exists()
    assert [c.checkpoint_id for c in live.store.list_run_checkpoints("sim")] == []


async def test_the_loss_curve_follows_metrics_jsonl(live: Live) -> None:
    live.saved("000010")
    async with newest_first(live) as (app, pilot):
        await cursor_to(pilot, app, live.run.tinker_path("000010"))
        await settle(pilot)
        assert "steps 1–10, step 10 highlighted" in screen_text(app)
        live.run.train(30)
        live.saved("000050")
        await refresh(pilot)
        await cursor_to(pilot, app, live.run.tinker_path("000050"))
        await settle(pilot)
        assert "steps 1–50, step 50 highlighted" in screen_text(app)


async def test_new_rows_stay_in_sight(live: Live) -> None:
    live.saved("000010", "000020")
    async with newest_first(live) as (app, pilot):
        assert cursor_row(app).name == "000020"
        live.saved("000030")
        await refresh(pilot)
        assert cursor_row(app).name == "000030"  # on the first row: it follows the top
        assert "new above" not in status_line(app)
        await pilot.press("j")
        await pilot.pause()
        live.saved("000040", "000050")
        await refresh(pilot)
        assert cursor_row(app).name == "000020"  # further down: it stays
        assert "2 new above" in status_line(app)
        await pilot.press("g")
        await pilot.pause()
        assert cursor_row(app).name == "000050" and "new above" not in status_line(app)
