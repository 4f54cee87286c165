"""A long bulk change in the TUI: its progress (done/total, rate, time left) in the status
line, and esc or ctrl+c to stop it, against a real server that holds its answers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.screens.quit_dialog import StopDialog
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import run_server
from tests.support.seed import seed_store
from tests.support.tui import checkpoints, make_app, screen_line, screen_text, settle
from tests.support.waiting import until

COUNT = 100
"""More than the pace sends at first (`pacing.START`), so some are not tried when stopped."""
FIRST = 8
"""Deletes the server answers at once; the others wait until the test lets them through."""


def stored(store: Store) -> set[str]:
    return {c.tinker_path for c in store.list_checkpoints(0, 1000)[0]}


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_a_stopped_delete_reports_done_and_not_tried_and_R_carries_on(
    store: Store, clock: FixedClock, tmp_path: Path, key: str
) -> None:
    seed_store(store, runs=1, per_run=COUNT)
    faulty = FaultyApp(create_app(store, sweep_interval=None))
    gate = faulty.hold(method="DELETE", after=FIRST)
    with run_server(faulty) as url:
        app = make_app(url, tmp_path, clock)
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                await settle(pilot)
                await pilot.press("2", "ctrl+a", "d", *"delete", "enter")
                await until(lambda: f"Deleting {FIRST} of {COUNT}" in screen_text(app), pilot.pause)
                line = screen_line(app, "Deleting")
                assert re.search(rf"Deleting {FIRST} of {COUNT} · [\d,.]+/s · \S+ left", line)
                assert "esc stops" in line
                row = checkpoints(app).cursor_row
                await pilot.press("j")  # browsing goes on meanwhile
                assert checkpoints(app).cursor_row == row + 1
                await pilot.press(key)
                await pilot.pause()
                assert isinstance(app.screen, StopDialog)
                assert app.focused is not None and app.focused.id == "quit-cancel"
                await pilot.press("enter")  # keep running: nothing changes
                await pilot.pause()
                assert not isinstance(app.screen, StopDialog)
                await pilot.press(key, "y")
                await pilot.pause()
                gate.set()  # what was sent finishes
                await settle(pilot)
                sent = faulty.count("DELETE")
                left = stored(store)
                assert FIRST < sent < COUNT and len(left) == COUNT - sent
                entry = app.session_log.entries[-1]
                assert entry.summary == f"Deleted {sent} of {COUNT}; {COUNT - sent} not tried"
                assert {item.path for item in entry.items if not item.ok} == left
                # the not-tried ones stay marked
                assert checkpoints(app).marks == {("demo", path) for path in left}
                await pilot.press("R")
                await settle(pilot)
                assert stored(store) == set()
                assert faulty.count("DELETE") == COUNT  # none sent twice
        finally:
            gate.set()
