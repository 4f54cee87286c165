"""FastTable driven through Textual's Pilot in a tiny app, plus its pure layout helpers."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from ckpt_tui.catalog.substring_index import SubstringIndex
from ckpt_tui.tui.widgets import NO_ROW, Cell, Column, FastTable
from ckpt_tui.tui.widgets.table_layout import column_at, find_key, fit_text, layout_widths

SIZE = (80, 24)
PAGE = SIZE[1] - 1  # the header takes one line of the 24


@dataclass(frozen=True)
class Ckpt:
    """A checkpoint-like row."""

    name: str
    step: int
    missing: bool = False


COLUMNS = [
    Column("name", "Name", width=12, flex=1),
    Column("step", "Step", width=8, align="right"),
]


def render_ckpt(row: Ckpt) -> Sequence[Cell | str]:
    return [Cell(row.name, "warning" if row.step % 2 else None), str(row.step)]


def ckpt_key(row: Ckpt) -> Hashable:
    return row.name


def make_rows(count: int) -> list[Ckpt]:
    return [Ckpt(f"ckpt-{index:06d}", index, missing=index % 7 == 3) for index in range(count)]


class TableApp(App[None]):
    """Holds one FastTable and records the messages it posts."""

    def __init__(self, rows: Sequence[Ckpt]) -> None:
        super().__init__()
        self.initial_rows = rows
        self.highlighted: list[FastTable.Highlighted] = []
        self.selected: list[FastTable.Selected] = []
        self.header_clicks: list[str] = []

    def compose(self) -> ComposeResult:
        yield FastTable(
            COLUMNS,
            render_ckpt,
            ckpt_key,
            rows=self.initial_rows,
            row_style=lambda row: "dim" if row.missing else None,
        )

    @property
    def table(self) -> FastTable[Ckpt]:
        return self.query_one(FastTable)

    def on_fast_table_highlighted(self, message: FastTable.Highlighted) -> None:
        self.highlighted.append(message)

    def on_fast_table_selected(self, message: FastTable.Selected) -> None:
        self.selected.append(message)

    def on_fast_table_header_clicked(self, message: FastTable.HeaderClicked) -> None:
        self.header_clicks.append(message.column_key)


def screen_lines(table: FastTable[Ckpt]) -> list[str]:
    """The text of every line the table shows now."""
    return [table.render_line(y).text for y in range(table.scrollable_content_region.height)]


async def press(pilot: Pilot[None], *keys: str) -> None:
    await pilot.press(*keys)
    await pilot.pause()


async def test_arrow_and_vim_keys_move_the_cursor() -> None:
    app = TableApp(make_rows(50))
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "down", "down", "j")
        assert app.table.cursor_row == 3
        await press(pilot, "up", "k")
        assert app.table.cursor_row == 1
        await press(pilot, "k", "k", "up")
        assert app.table.cursor_row == 0


async def test_paging_moves_cursor_and_view_by_one_page() -> None:
    app = TableApp(make_rows(500))
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "pagedown")
        assert app.table.cursor_row == PAGE
        assert round(app.table.scroll_y) == PAGE
        assert screen_lines(app.table)[1].strip().startswith(f"ckpt-{PAGE:06d}")
        await press(pilot, "pagedown", "pageup")
        assert app.table.cursor_row == PAGE
        await press(pilot, "pageup", "pageup")
        assert app.table.cursor_row == 0
        assert round(app.table.scroll_y) == 0


async def test_home_end_and_g_keys_jump_to_the_ends() -> None:
    app = TableApp(make_rows(300))
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "end")
        assert app.table.cursor_row == 299
        await press(pilot, "home")
        assert app.table.cursor_row == 0
        await press(pilot, "G")
        assert app.table.cursor_row == 299
        await press(pilot, "g")
        assert app.table.cursor_row == 0


async def test_highlighted_message_carries_the_cursor_row() -> None:
    rows = make_rows(40)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "j", "j", "j")
        last = app.highlighted[-1]
        assert (last.row_index, last.row) == (3, rows[3])
        assert last.control is app.table


async def test_enter_posts_selected_for_the_cursor_row() -> None:
    rows = make_rows(10)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "down", "enter")
        assert [(m.row_index, m.row) for m in app.selected] == [(1, rows[1])]


async def test_marks_toggle_and_survive_set_rows() -> None:
    rows = make_rows(20)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "down", "space")  # marks row 1 and moves down
        assert app.table.marks == {rows[1].name} and app.table.cursor_row == 2
        await press(pilot, "space", "up", "space")  # marks 2, unmarks it again
        assert app.table.marks == {rows[1].name} and app.table.cursor_row == 3
        app.table.set_rows(list(reversed(rows)))
        await pilot.pause()
        assert app.table.marks == {rows[1].name}
        marked_lines = [line for line in screen_lines(app.table) if line.startswith("●")]
        assert len(marked_lines) == 1
        assert rows[1].name in marked_lines[0]
        app.table.clear_marks()
        assert app.table.marks == frozenset()


async def test_cursor_follows_its_row_key_after_reordering() -> None:
    rows = make_rows(100)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, *["j"] * 5)
        app.table.set_rows(list(reversed(rows)))
        await pilot.pause()
        assert app.table.cursor_row == 94
        assert app.table.cursor_value == rows[5]
        assert app.highlighted[-1].row == rows[5]
        cursor_line = app.table.cursor_row - round(app.table.scroll_y) + 1
        assert rows[5].name in screen_lines(app.table)[cursor_line]


async def test_markup_like_text_is_shown_literally() -> None:
    app = TableApp([Ckpt("run[bold]1", 1), Ckpt("[red]x[/red]", 2)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        lines = screen_lines(app.table)
        assert "run[bold]1" in lines[1]
        assert "[red]x[/red]" in lines[2]
        assert "run[bold]1" in app.export_screenshot()


async def test_empty_state_shows_the_message_and_highlights_no_row() -> None:
    app = TableApp([])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "Loading…" in screen_lines(app.table)[2]
        app.table.set_rows(make_rows(3))
        await pilot.pause()
        app.table.empty_message = "No checkpoints match /foo"
        app.table.set_rows([])
        await pilot.pause()
        assert "No checkpoints match /foo" in screen_lines(app.table)[2]
        assert app.table.cursor_row == NO_ROW
        assert app.highlighted[-1].row_index == NO_ROW
        await press(pilot, "down", "end", "enter", "space")
        assert app.selected == []


async def test_hundred_thousand_rows_reach_the_last_row() -> None:
    rows = make_rows(100_000)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "end")
        assert app.table.cursor_row == 99_999
        assert "ckpt-099999" in screen_lines(app.table)[-1]
        assert app.highlighted[-1].row == rows[-1]


async def test_clicks_select_rows_and_report_headers() -> None:
    rows = make_rows(30)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.click(FastTable, offset=(5, 4))
        await pilot.pause()
        assert app.table.cursor_row == 3
        await pilot.click(FastTable, offset=(4, 0))
        await pilot.pause()
        assert app.header_clicks == ["name"]


async def test_row_and_cell_styles_reach_the_segments() -> None:
    app = TableApp(make_rows(10))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        missing_row = app.table.render_line(1 + 3)  # row 3 is "missing": dimmed whole row
        assert all(segment.style and segment.style.dim for segment in missing_row)
        cursor_row = app.table.render_line(1)
        assert all(segment.style and segment.style.bold for segment in cursor_row)


async def test_sort_indicator_shows_in_the_header() -> None:
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        app.table.set_sort_indicator("step", reverse=True)
        await pilot.pause()
        assert "Step ▼" in screen_lines(app.table)[0]


async def test_no_color_cursor_is_reverse_video(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = TableApp(make_rows(5))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        cursor_style = next(iter(app.table.render_line(1))).style
        assert cursor_style is not None and cursor_style.reverse


async def test_unknown_style_name_is_a_clear_error() -> None:
    table: FastTable[str] = FastTable(
        [Column("a", "A")], lambda row: [Cell(row, "shiny")], lambda row: row, rows=["x"]
    )
    app = App[None]()
    # The error comes from whichever renders the row first: this call, or the screen's own
    # refresh right after mounting (then run_test raises it on the way out).
    with pytest.raises(ValueError, match="shiny"):
        async with app.run_test(size=SIZE):
            await app.mount(table)
            table.render_line(1)


def test_flexible_column_takes_the_spare_width() -> None:
    columns = [Column("a", "A", 5), Column("b", "B", 4, flex=1), Column("c", "C", 3)]
    # mark column 2 + widths + 2 gaps = 80
    assert layout_widths(columns, 80) == [5, 68, 3]
    assert layout_widths(columns, 10) == [5, 4, 3]


def test_fit_text_truncates_with_an_ellipsis_and_aligns() -> None:
    assert fit_text("checkpoint", 6, "left") == "check…"
    assert fit_text("42", 5, "right") == "   42"
    assert fit_text("日本語テキスト", 6, "left") == "日本 …"  # a wide char never splits
    assert fit_text("a\nb", 4, "left") == "a b "


def test_bad_column_and_missing_key_are_reported() -> None:
    with pytest.raises(ValueError, match="width"):
        Column("x", "X", width=0)
    with pytest.raises(ValueError, match="align"):
        Column("x", "X", align="centre")  # type: ignore[arg-type]
    assert find_key(["a", "b"], str.upper, "B") == 1
    assert find_key(["a", "b", "b"], str.upper, "B", hint=2) == 2
    assert find_key(["a"], str.upper, "Z") == -1


def test_header_hit_test_gives_each_column_its_cells() -> None:
    # Layout: 2 mark cells, "Name" 12 wide + gap (x 2..14), "Step" 8 wide (x 15..23).
    assert column_at(COLUMNS, [12, 8], 1) is None
    assert column_at(COLUMNS, [12, 8], 2) == COLUMNS[0]
    assert column_at(COLUMNS, [12, 8], 15) == COLUMNS[1]
    assert column_at(COLUMNS, [12, 8], 30) is None


def test_substring_index_ignores_case_and_narrows_while_typing() -> None:
    rows = [Ckpt("SFT-llama-1", 1), Ckpt("rl-Qwen-2", 2), Ckpt("sft-qwen-3", 3)]
    index = SubstringIndex(rows, lambda row: row.name)
    assert index.filter("sft") == [rows[0], rows[2]]
    assert index.filter("sft-q") == [rows[2]]
    assert index.filter("qwen") == [rows[1], rows[2]]  # not a refinement: searches all rows
    assert index.filter("") == rows
    assert index.filter("nothing") == []


async def test_cursor_keeps_its_index_when_its_row_is_filtered_out() -> None:
    rows = make_rows(50)
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, *["j"] * 10)
        app.table.set_rows([row for row in rows if row.step != 10])
        await pilot.pause()
        assert app.table.cursor_row == 10
        assert app.highlighted[-1].row == rows[11]
