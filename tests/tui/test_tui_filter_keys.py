"""A filter key press at the cost of what it changes on screen: the checkpoints table draws
only the rows a key brings into view, and a shown load leaves Python's garbage collector
nothing of it to walk in the middle of a key press. Typed keys, the real app, the demo."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.widgets import Cell
from tests.support.tui import (
    checkpoints,
    pictured_demo,
    screen_of,
    screen_text,
    settle,
    show_all_checkpoints,
)


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    """The app freezes what a load leaves (`gc.freeze`): the tests after these start thawed."""
    yield
    gc.unfreeze()


class DrawCounter:
    """Counts the checkpoint rows the table turns into cells (one per line it draws)."""

    def __init__(self, screen: BrowseScreen) -> None:
        self.drawn: list[CheckpointRow] = []
        self.cells_of = screen.checkpoint_cells
        screen.checkpoint_cells = self.count  # type: ignore[method-assign]

    def count(self, row: CheckpointRow) -> list[Cell]:
        self.drawn.append(row)
        return self.cells_of(row)

    def taken(self) -> list[CheckpointRow]:
        drawn, self.drawn = self.drawn, []
        return drawn


def on_screen(app: CkptApp) -> list[CheckpointRow]:
    table = checkpoints(app)
    top = round(table.scroll_y)
    return list(table.rows[top : top + table.scrollable_content_region.height - 1])


async def test_a_typed_filter_draws_only_the_rows_it_brings_into_view(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(120, 36)) as pilot:
            await show_all_checkpoints(pilot)
            screen = screen_of(app)
            counter = DrawCounter(screen)
            await pilot.press("slash")  # the box opens: the table is a line shorter
            await pilot.pause()
            assert counter.taken()
            await pilot.press("t")  # every row's path starts with tinker://
            await pilot.pause()
            box = screen.query_one("#filter", Input)
            assert box.value == "t" and "filter “t”" in screen_text(app)
            assert counter.taken() == []  # the same rows: no line drawn again (all of them before)
            await pilot.press("enter", "s")  # keep the filter; another sort draws every line
            await pilot.pause()
            assert len(counter.taken()) >= len(on_screen(app))


async def test_a_narrowing_key_draws_the_rows_new_in_view_and_no_other(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        # Short enough that the run's rows overflow the table: its scrollbar stays, and so
        # does the width of its lines (a new width draws every line again).
        async with app.run_test(size=(120, 24)) as pilot:
            await show_all_checkpoints(pilot)
            counter = DrawCounter(screen_of(app))
            await pilot.press("slash")
            await pilot.pause()
            before = on_screen(app)
            run = before[-1].run_name
            counter.taken()
            await pilot.press(*run)
            await pilot.pause()
            after = on_screen(app)
            assert after and all(row.run_name == run for row in after)
            new_in_view = [row for row in after if row not in before]
            drawn = counter.taken()
            # Each key draws the rows it brings into view, and the cursor's row when the cursor
            # moves onto another row; the run's rows in view from the start are never redrawn.
            kept = [row for row in after if row in before and row is not after[0]]
            assert kept and not any(row in drawn for row in kept)
            assert set(map(id, new_in_view)) <= set(map(id, drawn))


async def test_a_shown_load_leaves_the_collector_nothing_of_it_to_walk(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            catalog = screen_of(app).catalog
            assert catalog is not None and catalog.rows
            # A full collection walks every tracked object; at 100,000 checkpoints the lists
            # of rows and the app's own objects made one take ~100 ms of CPU inside a key.
            tracked = gc.get_objects()
            assert not any(thing is catalog.rows for thing in tracked)
            assert gc.get_freeze_count() > 0
