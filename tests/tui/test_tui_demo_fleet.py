"""Keys pressed as a person types them over `ckpt-tui demo`'s two backends: `K`'s scope and
title follow what is highlighted, the delete dialog says truly why some checkpoints are not on
screen, and the filter's count says whose rows it counts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.types import ASGIApp
from textual.pilot import Pilot
from textual.widgets import Button, Static

from ckpt_tui.backends.fleet_view import FleetCatalog, row_key
from ckpt_tui.catalog import RunSummary
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog
from tests.support.dialogs import shown_text
from tests.support.faulty_app import FaultyApp
from tests.support.tui import (
    checkpoints,
    pictured_demo,
    runs_pane,
    screen_of,
    screen_text,
    settle,
    shown,
)


def policy_dialog(app: CkptApp) -> KeepPolicyDialog:
    dialog = app.screen
    assert isinstance(dialog, KeepPolicyDialog)
    return dialog


def title(app: CkptApp) -> str:
    return str(policy_dialog(app).query_one("#kp-box").border_title)


def scope(app: CkptApp) -> str:
    return shown_text(policy_dialog(app).query_one("#kp-scope", Static))


async def to_delete_button(pilot: Pilot[None], app: CkptApp) -> None:
    """From the Keep last field, back round to the Delete button."""
    for _ in range(8):
        if app.focused is not None and app.focused.id == "kp-delete":
            return
        await pilot.press("shift+tab")
    raise AssertionError(f"shift+tab never reached Delete (at {app.focused})")


async def test_K_on_a_backend_row_plans_on_that_backend_only(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo", with_box=True) as app:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)  # the cursor starts on tinker-demo's own row
            await pilot.press("K")
            await pilot.pause()
            assert "all 6 runs on tinker-demo" in scope(app)
            assert "gpu-box" not in title(app) and "tinker-demo" in title(app)
            assert {row.backend for row in policy_dialog(app).rows} == {"tinker-demo"}


async def test_K_on_one_run_names_its_backend_and_the_buttons_are_whole(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo", with_box=True) as app:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("shift+tab", "j", "K")  # the first run under tinker-demo
            await pilot.pause()
            assert "Runs: rl/qwen3-8b-math" in scope(app)
            assert title(app).startswith("Keep policy on tinker-demo")
            assert "2 backends" not in title(app)
            await pilot.press("1")  # keep last 1
            await pilot.pause()
            delete = policy_dialog(app).query_one("#kp-delete", Button)
            label = str(delete.label)
            assert label.startswith("Delete ") and not label.endswith("…")
            assert label in screen_text(app)
            await pilot.press("shift+tab", "space")  # tick "all 8 runs": both backends now
            await pilot.pause()
            assert title(app) == "Keep policy on 2 backends: tinker-demo, gpu-box"


async def test_the_delete_dialog_K_leads_to_says_why_rows_are_not_shown(tmp_path: Path) -> None:
    """No filter is set: rows on other runs and backends are not "hidden by the filter"."""
    with pictured_demo(tmp_path / "demo", with_box=True) as app:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("shift+tab", "j", "K", "1")  # one run, keep last 1
            await pilot.pause()
            await pilot.press("shift+tab", "space")  # every run, on both backends
            await pilot.pause()
            await to_delete_button(pilot, app)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, DeleteDialog)
            text = screen_text(app)
            assert "filter" not in text
            assert "not in the checkpoints list on screen" in text


async def test_rows_a_filter_hides_are_still_said_to_be_hidden_by_it(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo", with_box=True) as app:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("2", "slash", *"llama-1b-sft", "enter", "ctrl+a")
            await settle(pilot)
            marked = set(checkpoints(app).marks)
            await pilot.press("slash", *["backspace"] * 12, *"checkpoint-2000", "enter")
            await settle(pilot)
            hidden = len(marked - {row_key(row) for row in shown(app)})
            assert len(marked) == 4 and 0 < hidden < 4
            await pilot.press("d")
            await pilot.pause()
            assert isinstance(app.screen, DeleteDialog)
            text = screen_text(app)
            verb = "is" if hidden == 1 else "are"
            assert f"{hidden} of these {verb} hidden by the current filter" in text
            assert "not in the checkpoints list" not in text


def status_line(app: CkptApp) -> str:
    return next(line for line in screen_text(app).splitlines() if " match" in line)


BOTH = {"tinker-demo", "gpu-box"}


async def catalog_of_both(pilot: Pilot[None], app: CkptApp) -> FleetCatalog:
    """The catalog once it holds both backends' rows: the workers can be done while the join
    of the last backend's rows still waits for its turn (pauses a bounded number of times)."""
    for _ in range(200):
        await settle(pilot)
        catalog = screen_of(app).catalog
        if catalog is not None and {row.backend for row in catalog.rows} >= BOTH:
            return catalog
        await pilot.pause(0.05)
    raise AssertionError("the catalog never held both backends' rows")


async def test_the_filter_count_says_whose_rows_it_counts(tmp_path: Path) -> None:
    """By run it counts the highlighted run's or backend's rows; all checkpoints, both's."""
    with pictured_demo(tmp_path / "demo", with_box=True) as app:
        async with app.run_test(size=(120, 36)) as pilot:
            catalog = await catalog_of_both(pilot, app)
            on_box = sum(row.backend == "gpu-box" for row in catalog.rows)
            await pilot.press("slash", *"checkpoint-", "enter")  # only gpu-box's Trainer saves
            await settle(pilot)
            assert f"{on_box} of {on_box} on gpu-box match" in status_line(app)
            await pilot.press("shift+tab")  # onto the runs pane
            for _ in range(3):  # down to gpu-box's first run
                await pilot.press("j")
                await settle(pilot)
                run = runs_pane(app).cursor_value
                if isinstance(run, RunSummary):
                    break
            assert isinstance(run, RunSummary) and run.backend == "gpu-box"
            count = len(run.rows)
            assert f"{count} of {count} in {run.display_name} match" in status_line(app)
            await pilot.press("2")
            await settle(pilot)
            assert f"{on_box} of {len(catalog.rows)} on all 2 backends match" in status_line(app)


def held(gates: list[threading.Event]) -> Callable[[ASGIApp], ASGIApp]:
    """A wrap for tinker-demo's server whose GETs wait for the gate it appends to `gates`."""

    def wrap(server: ASGIApp) -> ASGIApp:
        faulty = FaultyApp(server)
        gates.append(faulty.hold(method="GET"))
        return faulty

    return wrap


async def status_once(pilot: Pilot[None], app: CkptApp, wanted: str) -> str:
    """The status line once it says `wanted` (pauses until it does, a bounded number)."""
    for _ in range(200):
        line = str(screen_of(app).query_one("#status-line").render())
        if wanted in line:
            return line
        await pilot.pause()
    raise AssertionError(f"the status line never said {wanted!r}: {line}")


async def test_loading_names_each_backend_and_what_it_waits_for(tmp_path: Path) -> None:
    """A slow backend says it waits for its server, by name, not a bare 'Loading…'."""
    gates: list[threading.Event] = []
    with pictured_demo(tmp_path / "demo", held(gates), with_box=True) as app:
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                line = await status_once(pilot, app, "Loading: ")
                assert "tinker-demo waiting for the server" in line
                gates[0].set()
                await settle(pilot)
                assert "Loading" not in str(screen_of(app).query_one("#status-line").render())
                gates[0].clear()
                await pilot.press("r")
                line = await status_once(pilot, app, "Refreshing: ")
                assert "tinker-demo waiting for the server" in line
                gates[0].set()
                await settle(pilot)
        finally:
            gates[0].set()


def table_header(app: CkptApp) -> str:
    return next(line for line in screen_text(app).splitlines() if "Checkpoint " in line)


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
async def test_the_sorted_column_shows_and_carries_the_arrow(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """All checkpoints over two backends: sorted by created, Created shows (at 120 columns;
    at 80 the kind keeps its room); by expiry the arrow sits on Expires; by name, which orders
    by run first, on Run (at 80 columns Run has no room: no arrow), never on Checkpoint."""
    with pictured_demo(tmp_path / "demo", with_box=True) as app:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("2")
            await settle(pilot)
            assert ("Created ▲" in table_header(app)) == (size[0] >= 120)
            await pilot.press("s", "s")  # size, then expiry
            await settle(pilot)
            assert "Expires ▲" in table_header(app)
            await pilot.press("s")  # name
            await settle(pilot)
            header = table_header(app)
            assert "Checkpoint ▲" not in header
            assert "Run ▲" in header if size[0] >= 120 else " Run " not in header
            names = [(row.run_name.lower(), row.name.lower()) for row in shown(app)]
            assert names == sorted(names)
