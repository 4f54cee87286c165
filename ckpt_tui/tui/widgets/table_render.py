"""Turning cells into `Strip`s for `FastTable`: one function per kind of line.

These functions only combine styles and text; the widget decides what to draw and caches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from ckpt_tui.tui.widgets.table_layout import (
    COLUMN_GAP,
    MARK_WIDTH,
    Cell,
    Column,
    check_style_name,
    fit_text,
)

FAST_TABLE_CSS = """
FastTable {
    width: 1fr;
    height: 1fr;
    overflow-x: hidden;
    overflow-y: auto;
    & > .fast-table--header { text-style: bold; color: $text-accent; background: $panel; }
    & > .fast-table--cursor {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
        text-style: bold;
    }
    &:focus > .fast-table--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    & > .fast-table--marked { color: $text-accent; text-style: bold; }
    & > .fast-table--empty { text-style: italic; }
    & > .fast-table--dim { text-style: dim; }
    & > .fast-table--bold { text-style: bold; }
    & > .fast-table--warning { color: $text-warning; }
    & > .fast-table--error { color: $text-error; }
    & > .fast-table--success { color: $text-success; }
    & > .fast-table--accent { color: $text-accent; }
    /* NO_COLOR: meaning must not rest on colour alone. */
    &:nocolor > .fast-table--cursor { text-style: bold reverse; }
    &:nocolor > .fast-table--header { text-style: bold underline; }
}
"""
"""Default look; the app's .tcss overrides any `.fast-table--*` component class."""

SORT_ARROWS = {False: " ▲", True: " ▼"}
"""Appended to the sorted column's label: ascending, descending."""


@dataclass
class TableStyles:
    """Rich styles resolved from the table's component classes.

    `cursor`, `header` and `empty` are full styles (their backgrounds blend like any widget);
    `marked` and `overlays` are partial so they layer over the base style.
    """

    base: Style
    cursor: Style
    header: Style
    empty: Style
    marked: Style
    overlays: dict[str, Style] = field(default_factory=dict)

    def with_overlay(self, name: str | None) -> Style:
        """The base style plus the named overlay; an unknown name raises a clear ValueError."""
        if name is None:
            return self.base
        check_style_name(name)
        return self.base + self.overlays[name]


@dataclass(frozen=True)
class RowLook:
    """How one row is drawn: its whole-row style name, cursor and mark state."""

    row_style: str | None
    is_cursor: bool
    marked: bool
    mark_glyph: str


def render_row(
    cells: Sequence[Cell | str],
    columns: Sequence[Column],
    widths: Sequence[int],
    width: int,
    styles: TableStyles,
    look: RowLook,
) -> Strip:
    """One data line, exactly `width` cells wide; missing cells are blank, extra ones ignored."""
    row_style = styles.with_overlay(look.row_style)
    if look.marked:
        row_style += styles.marked
    line_style = row_style + styles.cursor if look.is_cursor else row_style
    mark = look.mark_glyph if look.marked else " "
    segments = [Segment(mark.ljust(MARK_WIDTH), line_style)]
    gap = Segment(" " * COLUMN_GAP, line_style)
    for index, (column, cell_width) in enumerate(zip(columns, widths, strict=True)):
        cell = cells[index] if index < len(cells) else ""
        text, style_name = (cell, None) if isinstance(cell, str) else (cell.text, cell.style)
        style = row_style
        if style_name:
            check_style_name(style_name)
            style += styles.overlays[style_name]
        if look.is_cursor:
            style += styles.cursor
        if index:
            segments.append(gap)
        segments.append(Segment(fit_text(text, cell_width, column.align), style))
    return Strip(segments).adjust_cell_length(width, line_style)


def render_header(
    columns: Sequence[Column],
    widths: Sequence[int],
    width: int,
    style: Style,
    sort: tuple[str | None, bool],
) -> Strip:
    """The header line; `sort` is (sorted column key or None, descending)."""
    sort_key, descending = sort
    labels = []
    for column, cell_width in zip(columns, widths, strict=True):
        label = column.label + (SORT_ARROWS[descending] if column.key == sort_key else "")
        labels.append(fit_text(label, cell_width, column.align))
    text = " " * MARK_WIDTH + (" " * COLUMN_GAP).join(labels)
    return Strip([Segment(text, style)]).adjust_cell_length(width, style)


def render_message(message: str, width: int, style: Style) -> Strip:
    """A line holding `message` (e.g. the empty-state text), indented like the first column."""
    text = " " * MARK_WIDTH + message
    return Strip([Segment(fit_text(text, width, "left"), style)])
