"""The delete dialog through a real Textual pilot: Cancel by default, `y` or the typed word."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from textual.widgets import Button, Input

from ckpt_tui.actions.owners import Targets
from ckpt_tui.backends import Backend
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.sizes import Size
from ckpt_tui.tui.screens.delete_dialog import DeleteChoice, DeleteDialog
from tests.support.dialogs import (
    NOW,
    WHERE,
    DialogApp,
    GiB,
    changed,
    ckpt,
    flagged,
    many_rows,
    rows_of,
    screen_text,
)
from tests.support.tui import screen_line, shows_path


def safe_rows() -> list[CheckpointRow]:
    return rows_of(ckpt("000100", 5), ckpt("000200", 48))


def risky_rows() -> list[CheckpointRow]:
    """A final, a resume point, a public one and a plain one."""
    rows = rows_of(
        ckpt("final", None), ckpt("000300", 5), ckpt("pub", 5, public=True), ckpt("x", 1)
    )
    return [flagged(rows[0], final=True), flagged(rows[1], resume=True), rows[2], rows[3]]


def delete_app(rows: list[CheckpointRow], hidden: int = 0) -> DialogApp[DeleteChoice]:
    return DialogApp(lambda: DeleteDialog(rows, hidden, NOW, WHERE))


@pytest.mark.parametrize("key", ["enter", "escape", "n"])
async def test_cancel_is_focused_and_enter_escape_n_cancel(key: str) -> None:
    app = delete_app(safe_rows())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "delete-cancel"
        await pilot.press(key)
        await pilot.pause()
    assert app.results == ["cancel"]


async def test_y_deletes_a_small_safe_set_and_e_expires_instead() -> None:
    app = delete_app(safe_rows())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("y")
        await pilot.pause()
    assert app.results == ["delete"]
    app = delete_app(safe_rows())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("e")
        await pilot.pause()
    assert app.results == ["expire"]


async def test_letters_are_shortcuts_only_on_the_buttons_when_the_word_is_needed() -> None:
    app = delete_app(risky_rows())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press(*"yne")  # typed into the box: no shortcut fires
        await pilot.pause()
        assert app.results == []
        assert app.screen.query_one("#delete-word", Input).value == "yne"
        await pilot.press("tab")  # to Cancel
        assert app.focused is not None and app.focused.id == "delete-cancel"
        await pilot.press("e")
        await pilot.pause()
    assert app.results == ["expire"]


@pytest.mark.parametrize("make_rows", [risky_rows, lambda: many_rows(11)], ids=["final", "eleven"])
async def test_risky_or_big_sets_need_the_exact_word(
    make_rows: Callable[[], list[CheckpointRow]],
) -> None:
    app = delete_app(make_rows())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "delete-word"
        assert app.screen.query_one("#delete-confirm", Button).disabled
        await pilot.press("y", "enter")  # "y" typed into the box is not a confirmation
        await pilot.pause()
        assert app.results == []
        await pilot.press("backspace", *"delet", "enter")
        await pilot.pause()
        assert app.results == []
        await pilot.press("e")
        assert not app.screen.query_one("#delete-confirm", Button).disabled
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == ["delete"]


async def test_y_on_the_buttons_points_at_the_box() -> None:
    app = delete_app(risky_rows())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("tab", "y")
        await pilot.pause()
        assert app.results == []
        assert app.focused is not None and app.focused.id == "delete-word"
        assert "Type the word delete" in screen_text(app)


async def test_delete_button_works_once_the_word_is_typed() -> None:
    app = delete_app(risky_rows())
    async with app.run_test(size=(120, 36)) as pilot:
        app.screen.query_one("#delete-word", Input).value = "delete"
        await pilot.pause()
        await pilot.click("#delete-confirm")
        await pilot.pause()
    assert app.results == ["delete"]


async def test_lists_rows_total_and_every_warning() -> None:
    app = delete_app(risky_rows(), hidden=3)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "Delete 4 checkpoints?" in text
    assert "final" in text and "pub" in text and "2d ago" in text and "1.0 GiB" in text
    assert "Frees 4.0 GiB" in text
    assert "1 is a final checkpoint" in text
    assert "1 is a resume point" in text
    assert "1 is public" in text
    assert "3 of these are hidden by the current filter" in text
    assert "type delete" in text.lower()


async def test_unknown_sizes_make_the_total_at_least() -> None:
    known, unknown = rows_of(ckpt("a", 5, size=GiB), ckpt("b", 5, size=None))
    rows = [known, changed(unknown, size=Size.unknown("no size and no model to estimate from"))]
    app = delete_app(rows)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "Frees at least 1.0 GiB (1 size unknown)" in text


LONG_STORE = "/home/me/a-rather-long-folder-name/for-the-training-box/outputs/checkpoints-store"
BACKENDS = {
    "box": Backend("box", "local", LONG_STORE),
    "box2": Backend("box2", "url", "http://127.0.0.1:8751"),
}


def on_backends(*names: str) -> list[CheckpointRow]:
    """One 1 GiB checkpoint on each backend named, in that order."""
    rows = rows_of(*(ckpt(f"{step:06d}", 48) for step in range(len(names))))
    return [changed(row, backend=name) for row, name in zip(rows, names, strict=True)]


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_each_backend_is_one_line_of_name_count_size_and_its_place_shortened(
    size: tuple[int, int],
) -> None:
    rows = on_backends("box", "box", "box2")
    where = Targets(rows, several=True).where(BACKENDS)
    app = DialogApp(lambda: DeleteDialog(rows, 0, NOW, where))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        box = screen_line(app, "on box:")
        box2 = screen_line(app, "on box2:")
    shown = re.search(r"on box: 2 checkpoints, 2\.0 GiB \(local store (\S+)\)", box)
    assert shown is not None and shows_path(shown[1], LONG_STORE)
    assert shown[1].endswith("/checkpoints-store")
    assert "on box2: 1 checkpoint, 1.0 GiB (http://127.0.0.1:8751)" in box2


async def test_one_backend_is_named_with_its_place_on_one_line_at_80_columns() -> None:
    rows = on_backends("box", "box")
    app = DialogApp(lambda: DeleteDialog(rows, 0, NOW, Targets(rows).where(BACKENDS)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        line = screen_line(app, "on box (")
    shown = re.search(r"on box \(local store (\S+)\)", line)
    assert shown is not None and shows_path(shown[1], LONG_STORE)


async def test_a_big_set_is_counted_with_thousands_separators() -> None:
    app = delete_app(many_rows(2000))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "Delete 2,000 checkpoints?" in text
        assert re.search(r"and 1,9\d\d more", text)
