"""Every terminal size: the backend stays in the header, t/d/K stay in the footer, the details
pane gives way first, and below 60x16 the screen says it is too small. Layout glitches: the
Base model column after views 2/3, names and times not cut at 120 columns, help's wrapping."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from textual.widgets import Footer

from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.screens.help_dialog import CLOSE_HINT, help_text
from tests.support.tui import (
    PICTURE_URL,
    checkpoints,
    pictured_demo,
    runs,
    screen_of,
    screen_text,
    settle,
)

HOST = PICTURE_URL.removeprefix("http://")


def footer_hints(app: CkptApp) -> list[str]:
    """The footer's hints that are wholly on screen, as drawn."""
    footer = app.screen.query_one(Footer)
    width = app.size.width
    shown = [key for key in footer.query("*") if key.region.width and key.region.right <= width]
    return [str(key.render()) for key in shown]


async def test_80x24_keeps_the_backend_and_the_action_keys(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            hints = " ".join(footer_hints(app))
            header = str(screen_of(app).query_one("#header-line").render())
    assert HOST in header and "checkpoints" in header
    for hint in ("t TTL", "d Delete", "K Keep"):
        assert hint in hints, hints


async def test_60x18_hides_the_details_pane_before_the_rows(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(60, 18)) as pilot:
            await settle(pilot)
            await pilot.press("2")
            await settle(pilot)
            screen = screen_of(app)
            details_shown = screen.query_one("#details").display
            table = checkpoints(app)
            visible_rows = table.size.height - 1  # less the header line
            header = str(screen.query_one("#header-line").render())
    assert not details_shown
    assert visible_rows >= 8
    assert HOST in header


async def test_below_the_minimum_it_says_so_and_comes_back(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(40, 12)) as pilot:
            await settle(pilot)
            assert "terminal too small (need 60x16)" in screen_text(app)
            assert not screen_of(app).query_one("#body").display
            await pilot.resize_terminal(60, 16)
            await settle(pilot)
            assert "terminal too small" not in screen_text(app)
            assert checkpoints(app).size.height >= 4


async def test_back_to_view_1_keeps_the_base_model_column(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            assert "model" in [column.key for column in runs(app).columns]
            for view in ("2", "3"):
                await pilot.press(view, "1")  # no cursor move in between
                await settle(pilot)
                assert "model" in [column.key for column in runs(app).columns], view
            assert "Base model" in screen_text(app)


async def test_at_120_columns_names_and_times_are_whole(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("2")
            await settle(pilot)
            text = screen_text(app)
            await pilot.press("1")
            await settle(pilot)
            by_run = screen_text(app)
    for whole in ("rl/qwen3-8b-math", "full/llama-3b-ft", "rolling missing", "5m ago"):
        assert whole in text, whole
    assert "…" not in by_run.split("Checkpoint", 1)[1].split("tinker://", 1)[0]


async def test_help_says_how_to_close_it_and_q_does(tmp_path: Path) -> None:
    with pictured_demo(tmp_path / "demo") as app:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.press("question_mark")
            await pilot.pause()
            assert CLOSE_HINT in screen_text(app)
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, BrowseScreen)


def test_a_wrapped_help_line_stays_in_its_column() -> None:
    console = Console(width=70, record=True, color_system=None)
    console.print(help_text())
    lines = console.export_text().splitlines()
    start = lines[1].index("Move the cursor")  # the first key's description
    wrapped = [line for line in lines if line.strip() and not line[:start].strip()]
    assert wrapped, "expected a description long enough to wrap at 70 columns"
    assert all(line[start] != " " for line in wrapped)  # each continues under its start
