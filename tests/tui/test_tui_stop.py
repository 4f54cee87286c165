"""A long bulk change in the TUI: its progress (done/total, rate, time left) in the status
line, and esc or ctrl+c to stop it, against a real server that holds its answers."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import NamedTuple

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Static

from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.quit_dialog import QuitDialog, StopDialog
from tests.support.faulty_app import FaultyApp
from tests.support.live_server import run_server
from tests.support.seed import seed_store
from tests.support.tui import checkpoints, make_app, screen_line, screen_text, settle
from tests.support.waiting import until

COUNT = 100
"""More than the pace sends at first (`pacing.START`), so some are not tried when stopped."""
FIRST = 8
"""Deletes the server answers at once; the others wait until the test lets them through."""
SECOND = 40
"""Deletes answered once the first gate opens; the rest wait for the second."""


def stored(store: Store) -> set[str]:
    return {c.tinker_path for c in store.list_checkpoints(0, 1000)[0]}


class Deleting(NamedTuple):
    """The real app deleting every checkpoint of a store through a real server that holds
    DELETEs (`deleting_all`)."""

    app: CkptApp
    pilot: Pilot[None]
    faulty: FaultyApp
    gates: list[threading.Event]


@asynccontextmanager
async def deleting_all(
    store: Store, clock: FixedClock, tmp_path: Path, held_after: tuple[int, ...]
) -> AsyncIterator[Deleting]:
    """COUNT checkpoints seeded, all marked and deleted as a person types it (2, ctrl+a, d,
    the word, enter); yields once FIRST are done. A DELETE after the first `n` of each `n`
    in `held_after` waits for that one's gate; every gate opens on the way out."""
    seed_store(store, runs=1, per_run=COUNT)
    faulty = FaultyApp(create_app(store, sweep_interval=None))
    gates = [faulty.hold(method="DELETE", after=after) for after in held_after]
    with run_server(faulty) as url:
        app = make_app(url, tmp_path, clock)
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                await settle(pilot)
                await pilot.press("2", "ctrl+a", "d", *"delete", "enter")
                await until(lambda: f"Deleting {FIRST} of {COUNT}" in screen_text(app), pilot.pause)
                yield Deleting(app, pilot, faulty, gates)
        finally:
            for gate in gates:
                gate.set()


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_a_stopped_delete_reports_done_and_not_tried_and_R_carries_on(
    store: Store, clock: FixedClock, tmp_path: Path, key: str
) -> None:
    async with deleting_all(store, clock, tmp_path, (FIRST,)) as deleting:
        app, pilot, faulty, (gate,) = deleting
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


def dialog_line(app: CkptApp) -> str:
    """The stop or quit dialog's line that says how far the action is (the other line that
    does is the status line, which starts with the view's name)."""
    lines = screen_text(app).splitlines()
    shown = [line for line in lines if "Deleting" in line and "All checkpoints" not in line]
    assert len(shown) == 1, shown
    return shown[0]


@pytest.mark.parametrize("key", ["escape", "q"])
async def test_the_stop_and_quit_dialogs_follow_the_progress_without_the_stop_hint(
    store: Store, clock: FixedClock, tmp_path: Path, key: str
) -> None:
    """What runs goes on while the dialog asks: it shows the progress as it is now, never
    "esc stops" (in the dialog esc keeps it running). Once the action ends, the stop dialog
    closes (nothing is left to stop) and the quit dialog says so."""
    async with deleting_all(store, clock, tmp_path, (FIRST, SECOND)) as deleting:
        app, pilot, _, (first, second) = deleting
        await pilot.press(key)
        await pilot.pause()
        dialog = StopDialog if key == "escape" else QuitDialog
        assert type(app.screen) is dialog
        assert f"Deleting {FIRST} of {COUNT}" in dialog_line(app)
        first.set()  # the deletes sent so far are answered while the dialog asks
        await until(lambda: f"Deleting {SECOND} of" in dialog_line(app), pilot.pause)
        assert "esc stops" not in dialog_line(app)
        second.set()  # the action ends
        await until(lambda: not stored(store), pilot.pause)
        if key == "escape":
            await until(lambda: not isinstance(app.screen, StopDialog), pilot.pause)
            assert app.is_running
        else:
            await until(lambda: QuitDialog.ENDED in screen_text(app), pilot.pause)
            assert type(app.screen) is QuitDialog
            await pilot.press("enter")  # "Keep running" is still what enter does
            await pilot.pause()
            assert app.is_running and not isinstance(app.screen, QuitDialog)


class Host(App[None]):
    """An app with one plain screen under a stop dialog (a second close would pop it), and
    an action whose progress the test sets (None: it has ended)."""

    def __init__(self) -> None:
        super().__init__()
        self.running: str | None = "Deleting 1 of 2"
        self.chosen: list[bool | None] = []
        self.dialog = StopDialog(lambda: self.running, "here", "stopping keeps what is done")

    def compose(self) -> ComposeResult:
        yield Static("browse")

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.chosen.append)


async def test_a_choice_and_the_action_s_end_together_close_the_dialog_once() -> None:
    """y pressed as the action ends: the tick that lands before the closed dialog is removed
    must not close it a second time (that popped the screen under it)."""
    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press("y")  # the user stops it ...
        app.running = None  # ... as the action ends
        app.dialog.follow()  # the 0.25 s tick, before the closed screen is gone
        await pilot.pause()
        assert app.chosen == [True] and len(app.screen_stack) == 1


async def test_the_action_ending_under_the_command_palette_closes_the_dialog_after_it() -> None:
    """ctrl+p over the stop dialog, and the action ends: the palette stays until closed,
    then the dialog closes itself (before, the palette was closed in its place and the
    dialog could no longer be closed)."""
    app = Host()
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        palette = app.screen
        assert palette is not app.dialog
        app.running = None  # the action ends under the palette
        app.dialog.follow()
        await pilot.pause()
        assert app.screen is palette and app.chosen == []
        await pilot.press("escape")  # the palette closes
        await pilot.pause()
        app.dialog.follow()
        await pilot.pause()
        assert app.chosen == [False] and len(app.screen_stack) == 1
