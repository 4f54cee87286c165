"""`FastTable`: a virtual table that renders only the visible lines (Textual Line API).

The table holds a sequence of row objects of any type and turns a row into cells only when
that row is on screen, so replacing 100,000 rows costs one tuple copy, not 100,000 widgets.
Sorting and filtering belong to the app: it computes the new sequence and calls `set_rows`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import ClassVar, Generic, TypeAlias, TypeVar

from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size, clamp
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ckpt_tui.tui.widgets import table_messages
from ckpt_tui.tui.widgets.table_layout import (
    CELL_STYLES,
    MARK_WIDTH,
    Cell,
    Column,
    column_at,
    find_key,
    find_row,
    fit_text,
    layout_widths,
)
from ckpt_tui.tui.widgets.table_render import (
    FAST_TABLE_CSS,
    RowLook,
    TableStyles,
    render_header,
    render_message,
    render_row,
)

RowT = TypeVar("RowT")
RowRenderer = Callable[[RowT], Sequence["Cell | str"]]
RowKeyFunc = Callable[[RowT], Hashable]
RowStyleFunc = Callable[[RowT], "str | None"]

NO_ROW = -1
"""`cursor_row` (and `Highlighted.row_index`) when the table has no rows."""


class FastTable(ScrollView, Generic[RowT], can_focus=True):
    """A scrolling table of `rows` drawn line by line, with a row cursor and keyed marks."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fast-table--header",
        "fast-table--cursor",
        "fast-table--marked",
        "fast-table--empty",
        *(f"fast-table--{name}" for name in CELL_STYLES),
    }

    DEFAULT_CSS = FAST_TABLE_CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "cursor_page_up", "Page up", show=False),
        Binding("pagedown", "cursor_page_down", "Page down", show=False),
        Binding("home,g", "cursor_first", "First", show=False),
        Binding("end,G", "cursor_last", "Last", show=False),
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("space", "mark_and_down", "Mark", show=False),
    ]

    Highlighted: TypeAlias = table_messages.Highlighted
    Selected: TypeAlias = table_messages.Selected
    HeaderClicked: TypeAlias = table_messages.HeaderClicked
    MarksChanged: TypeAlias = table_messages.MarksChanged

    def __init__(
        self,
        columns: Sequence[Column],
        row_renderer: RowRenderer[RowT],
        row_key: RowKeyFunc[RowT],
        *,
        rows: Iterable[RowT] = (),
        row_style: RowStyleFunc[RowT] | None = None,
        empty_message: str = "Loading…",
        mark_glyph: str = "●",
        cache_size: int = 2048,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
        disabled: bool = False,
    ) -> None:
        """Create the table.

        Args:
            columns: Columns left to right; at least one.
            row_renderer: Turns a row into its cells (a `Cell` or a plain str per column).
            row_key: A stable, hashable identity of a row (marks and the cursor follow it).
            rows: Initial rows.
            row_style: Optional whole-row style name (one of `CELL_STYLES`), e.g. "dim".
            empty_message: Text shown when there are no rows.
            mark_glyph: One-cell glyph shown in the mark column of marked rows.
            cache_size: How many rendered lines to keep (LRU).
        """
        super().__init__(name=name, id=id, classes=classes, disabled=disabled)
        if not columns:
            raise ValueError("FastTable needs at least one Column.")
        self._columns = tuple(columns)
        self._row_renderer = row_renderer
        self._row_key = row_key
        self._row_style = row_style
        self._empty_message = empty_message
        self._mark_glyph = fit_text(mark_glyph, MARK_WIDTH - 1, "left")
        self._rows: tuple[RowT, ...] = tuple(rows)
        self._cursor = 0
        self._marks: set[Hashable] = set()
        self._sort_key: str | None = None
        self._sort_reverse = False
        # Lines by the row drawn (its id: the entry holds the row, so the id is never another
        # row's), not by its place: a filter that keeps the rows on screen draws none again.
        self._line_cache: LRUCache[tuple[int, int, bool, bool], tuple[RowT, Strip]] = LRUCache(
            cache_size
        )
        self._styles: TableStyles | None = None
        self._widths: tuple[int, list[int]] = (-1, [])
        self._highlight_pending = False
        self._last_highlight: tuple[int, object] | None = None

    @property
    def rows(self) -> Sequence[RowT]:
        """The rows in display order (read-only; replace them with `set_rows`)."""
        return self._rows

    @property
    def row_count(self) -> int:
        """Number of rows."""
        return len(self._rows)

    @property
    def columns(self) -> tuple[Column, ...]:
        """The columns, left to right."""
        return self._columns

    @property
    def cursor_row(self) -> int:
        """Index of the highlighted row, or `NO_ROW` when there are no rows."""
        return self._cursor if self._rows else NO_ROW

    @property
    def cursor_value(self) -> RowT | None:
        """The highlighted row object, or None when there are no rows."""
        return self._rows[self._cursor] if self._rows else None

    @property
    def marks(self) -> frozenset[Hashable]:
        """Marked row keys (may include keys of rows not currently shown)."""
        return frozenset(self._marks)

    @property
    def empty_message(self) -> str:
        """Text shown when there are no rows (e.g. "Loading…", "No checkpoints match /x")."""
        return self._empty_message

    @empty_message.setter
    def empty_message(self, message: str) -> None:
        self._empty_message = message
        if not self._rows:
            self.refresh()

    def set_rows(self, rows: Iterable[RowT], *, same_look: bool = False) -> None:
        """Replace all rows; O(n) with no per-row rendering.

        The cursor stays on the row with the same key when it is still present (and keeps its
        place on screen); otherwise it keeps its index, clamped to the new length.
        `same_look`: every row looks as it did (only which rows show changed, as when a
        filter is typed), so the lines already drawn for rows still shown are kept; by
        default every line is drawn again (a row's cells may show more than the row).
        """
        old_row = self._rows[self._cursor] if 0 <= self._cursor < len(self._rows) else None
        old_key = self._key_at(self._cursor)
        screen_offset = self._cursor - round(self.scroll_y)
        self._rows = tuple(rows)
        if not same_look:
            self._line_cache.clear()
        new_index = find_row(self._rows, old_row, hint=self._cursor)
        if new_index == NO_ROW:
            new_index = find_key(self._rows, self._row_key, old_key, hint=self._cursor)
        if new_index == NO_ROW:
            new_index = self._cursor
        self._cursor = clamp(new_index, 0, max(0, len(self._rows) - 1))
        self.virtual_size = Size(0, len(self._rows) + 1)
        if self.is_mounted:
            self.scroll_to(
                y=self._cursor - screen_offset, animate=False, immediate=True, force=True
            )
            self._scroll_cursor_into_view()
        self.refresh()
        self._schedule_highlight()

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Replace the columns (the row renderer must match them)."""
        if not columns:
            raise ValueError("FastTable needs at least one Column.")
        self._columns = tuple(columns)
        self._widths = (-1, [])
        self._line_cache.clear()
        self.refresh()

    def set_sort_indicator(self, column_key: str | None, reverse: bool = False) -> None:
        """Show ▲ (ascending) or ▼ (descending) after a column label; None hides it."""
        self._sort_key = column_key
        self._sort_reverse = reverse
        self.refresh_line(0)

    def move_cursor(self, row_index: int) -> None:
        """Highlight `row_index` (clamped) and scroll it into view."""
        if not self._rows:
            return
        new_index = clamp(row_index, 0, len(self._rows) - 1)
        if new_index != self._cursor:
            self._refresh_row(self._cursor)
            self._cursor = new_index
            self._refresh_row(new_index)
        self._scroll_cursor_into_view()
        self._schedule_highlight()

    def move_cursor_to_key(self, key: Hashable) -> bool:
        """Highlight the row whose key is `key`; return False if no row has it."""
        index = find_key(self._rows, self._row_key, key, hint=self._cursor)
        if index != NO_ROW:
            self.move_cursor(index)
        return index != NO_ROW

    def action_cursor_up(self) -> None:
        """Move the cursor one row up."""
        self.move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        """Move the cursor one row down."""
        self.move_cursor(self._cursor + 1)

    def action_cursor_page_up(self) -> None:
        """Scroll a page up and move the cursor with it."""
        self._page(-self._page_height())

    def action_cursor_page_down(self) -> None:
        """Scroll a page down and move the cursor with it."""
        self._page(self._page_height())

    def action_cursor_first(self) -> None:
        """Move the cursor to the first row."""
        self.move_cursor(0)

    def action_cursor_last(self) -> None:
        """Move the cursor to the last row."""
        self.move_cursor(len(self._rows) - 1)

    def action_select_cursor(self) -> None:
        """Post `Selected` for the cursor row."""
        if self._rows:
            self.post_message(self.Selected(self, self._cursor, self._rows[self._cursor]))

    def toggle_mark(self, key: Hashable) -> None:
        """Mark `key` if unmarked, else unmark it."""
        self._marks.symmetric_difference_update((key,))
        self._marks_changed()

    def set_marks(self, keys: Iterable[Hashable]) -> None:
        """Replace the marked keys."""
        self._marks = set(keys)
        self._marks_changed()

    def clear_marks(self) -> None:
        """Unmark everything."""
        self.set_marks(())

    def action_toggle_mark(self) -> None:
        """Toggle the mark on the cursor row."""
        key = self._key_at(self._cursor)
        if key is not None:
            self.toggle_mark(key)

    def action_mark_and_down(self) -> None:
        """Toggle the mark on the cursor row and move down, as in most file managers."""
        self.action_toggle_mark()
        self.action_cursor_down()

    def render_line(self, y: int) -> Strip:
        """Render screen line `y`: the header at 0, then rows from the scroll offset."""
        width = self.scrollable_content_region.width
        if y == 0:
            widths = self._column_widths(width)
            sort = (self._sort_key, self._sort_reverse)
            return render_header(self._columns, widths, width, self._table_styles().header, sort)
        if not self._rows:
            if y == 2:
                return render_message(self._empty_message, width, self._table_styles().empty)
            return Strip.blank(width, self.rich_style)
        index = y - 1 + round(self.scroll_y)
        if index >= len(self._rows):
            return Strip.blank(width, self.rich_style)
        return self._row_strip(index, width)

    def notify_style_update(self) -> None:
        """Drop cached styles and lines when CSS, theme or pseudo-classes change."""
        super().notify_style_update()
        self._styles = None
        self._line_cache.clear()
        self.refresh()

    def _row_strip(self, index: int, width: int) -> Strip:
        row = self._rows[index]
        marked = self._row_key(row) in self._marks
        is_cursor = index == self._cursor
        cache_key = (id(row), width, is_cursor, marked)
        cached = self._line_cache.get(cache_key)
        if cached is not None:
            return cached[1]
        style_name = self._row_style(row) if self._row_style else None
        look = RowLook(style_name, is_cursor, marked, self._mark_glyph)
        widths = self._column_widths(width)
        cells = self._row_renderer(row)
        strip = render_row(cells, self._columns, widths, width, self._table_styles(), look)
        self._line_cache.set(cache_key, (row, strip))
        return strip

    def _table_styles(self) -> TableStyles:
        """Styles from the component classes, resolved once per CSS/theme/focus change."""
        if self._styles is None:
            get = self.get_component_rich_style
            self._styles = TableStyles(
                base=self.rich_style,
                cursor=get("fast-table--cursor"),
                header=get("fast-table--header"),
                empty=get("fast-table--empty"),
                marked=get("fast-table--marked", partial=True),
                overlays={name: get(f"fast-table--{name}", partial=True) for name in CELL_STYLES},
            )
        return self._styles

    def _column_widths(self, width: int) -> list[int]:
        if self._widths[0] != width:
            self._widths = (width, layout_widths(self._columns, width))
        return self._widths[1]

    def on_mount(self) -> None:
        """Size the virtual area and announce the first highlighted row."""
        self.virtual_size = Size(0, len(self._rows) + 1)
        self._schedule_highlight()

    def on_resize(self, event: events.Resize) -> None:
        """Keep the cursor visible when the table gets shorter."""
        self._scroll_cursor_into_view()

    def on_click(self, event: events.Click) -> None:
        """Header click posts `HeaderClicked`; row click moves the cursor, double click selects."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            widths = self._column_widths(self.scrollable_content_region.width)
            column = column_at(self._columns, widths, offset.x)
            if column is not None:
                self.post_message(self.HeaderClicked(self, column.key))
            return
        index = offset.y - 1 + round(self.scroll_y)
        if index < len(self._rows):
            self.move_cursor(index)
            if event.chain >= 2:
                self.action_select_cursor()

    def _page_height(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _page(self, delta: int) -> None:
        if self._rows:
            self.scroll_to(
                y=round(self.scroll_y) + delta, animate=False, immediate=True, force=True
            )
            self.move_cursor(self._cursor + delta)

    def _scroll_cursor_into_view(self) -> None:
        # Every scroll here is forced and immediate: right after set_rows, the scrollbars are
        # those of the old rows (none, for a short list), and an unforced scroll_to does nothing
        # until the next layout; the cursor row was then left out of sight.
        if not self._rows or not self.is_mounted:
            return
        top = round(self.scroll_y)
        page = self._page_height()
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True, force=True)
        elif self._cursor >= top + page:
            self.scroll_to(y=self._cursor - page + 1, animate=False, immediate=True, force=True)

    def _refresh_row(self, index: int) -> None:
        # Virtual line = row index + 1 because the header takes line 0.
        self.refresh_line(index + 1)

    def _key_at(self, index: int) -> Hashable | None:
        return self._row_key(self._rows[index]) if 0 <= index < len(self._rows) else None

    def _marks_changed(self) -> None:
        # No cache clear needed: the mark state is part of each cached line's key.
        self.refresh()
        self.post_message(self.MarksChanged(self, frozenset(self._marks)))

    def _schedule_highlight(self) -> None:
        """Coalesce cursor moves: one `Highlighted` per burst, for the latest row."""
        if self.is_mounted and not self._highlight_pending:
            self._highlight_pending = True
            self.call_later(self._post_highlighted)

    def _post_highlighted(self) -> None:
        self._highlight_pending = False
        index, row = self.cursor_row, self.cursor_value
        last = self._last_highlight
        if last is None or last[0] != index or last[1] is not row:
            self._last_highlight = (index, row)
            self.post_message(self.Highlighted(self, index, row))
