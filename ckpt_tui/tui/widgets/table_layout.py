"""Plain data and pure functions behind `FastTable`: columns, cells, widths and text fitting.

Nothing here touches Textual, so the layout rules can be tested (and reused) on their own.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from rich.cells import cell_len, set_cell_size

Align = Literal["left", "right"]
RowT = TypeVar("RowT")

CELL_STYLES: tuple[str, ...] = ("dim", "bold", "warning", "error", "success", "accent")
"""Style names a `Cell` (or a whole row) may carry; each maps to `fast-table--<name>`."""

ELLIPSIS = "…"
COLUMN_GAP = 1
"""Blank cells between two columns."""

MARK_WIDTH = 2
"""Width of the leading mark column: the mark glyph and a space."""


@dataclass(frozen=True)
class Column:
    """One table column.

    Attributes:
        key: Identifier used in `HeaderClicked` and the sort indicator.
        label: Header text (plain text, never markup).
        width: Fixed width in cells, or the minimum width when `flex` > 0.
        align: "left" or "right" (right suits numbers and sizes).
        flex: 0 for a fixed column; > 0 to share the spare width in proportion to `flex`.
    """

    key: str
    label: str
    width: int = 10
    align: Align = "left"
    flex: int = 0

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"Column {self.key!r}: width must be >= 1, got {self.width}.")
        if self.flex < 0:
            raise ValueError(f"Column {self.key!r}: flex must be >= 0, got {self.flex}.")
        if self.align not in ("left", "right"):
            raise ValueError(
                f"Column {self.key!r}: align must be 'left' or 'right', got {self.align!r}."
            )


@dataclass(frozen=True, slots=True)
class Cell:
    """Plain cell text plus an optional style name from `CELL_STYLES`.

    The text is shown literally: "run[1]" or "[bold]" are never parsed as markup.
    """

    text: str
    style: str | None = None


def check_style_name(style: str | None) -> None:
    """Raise a ValueError that names the allowed styles if `style` is not one of them."""
    if style is not None and style not in CELL_STYLES:
        raise ValueError(
            f"Unknown FastTable style {style!r}; use one of {', '.join(CELL_STYLES)} or None."
        )


def layout_widths(columns: Sequence[Column], total_width: int) -> list[int]:
    """Widths for `columns` so that the row (mark column and gaps included) fills `total_width`.

    Fixed columns keep their width; flexible columns get at least their `width` and share
    what is left in proportion to `flex`. A row wider than `total_width` is cropped later.
    """
    widths = [column.width for column in columns]
    used = MARK_WIDTH + sum(widths) + COLUMN_GAP * max(0, len(columns) - 1)
    spare = total_width - used
    flex_total = sum(column.flex for column in columns)
    if spare <= 0 or flex_total == 0:
        return widths
    flexible = [index for index, column in enumerate(columns) if column.flex]
    given = 0
    for index in flexible:
        share = spare * columns[index].flex // flex_total
        widths[index] += share
        given += share
    # Integer division leaves a remainder; the last flexible column takes it.
    widths[flexible[-1]] += spare - given
    return widths


def fit_text(text: str, width: int, align: Align) -> str:
    """Pad or truncate `text` to exactly `width` cells, ending a cut with an ellipsis."""
    if "\n" in text or "\t" in text or "\r" in text:
        text = " ".join(text.split())
    length = len(text) if text.isascii() else cell_len(text)
    if length > width:
        if width <= 1:
            return ELLIPSIS[:width]
        if text.isascii():
            return text[: width - 1] + ELLIPSIS
        return set_cell_size(text, width - 1) + ELLIPSIS
    padding = " " * (width - length)
    return padding + text if align == "right" else text + padding


def find_key(
    rows: Sequence[RowT], row_key: Callable[[RowT], Hashable], key: Hashable, hint: int = -1
) -> int:
    """Index of the first row whose key equals `key`, or -1; `key` None is never found.

    The row at `hint` (usually where the key was before) is checked first; otherwise this is
    one C-level pass over the rows, O(n).
    """
    if key is None:
        return -1
    if 0 <= hint < len(rows) and row_key(rows[hint]) == key:
        return hint
    try:
        return operator.indexOf(map(row_key, rows), key)
    except ValueError:
        return -1


def find_row(rows: Sequence[RowT], row: RowT | None, hint: int = -1) -> int:
    """Index of `row` itself (or an equal row), or -1; `row` None is never found.

    Views usually hand the table the same row objects again, re-sorted or filtered, and a
    search by identity never touches the rows' attributes: about 5x quicker than comparing
    keys over 100,000 rows.
    """
    if row is None:
        return -1
    if 0 <= hint < len(rows) and rows[hint] is row:
        return hint
    try:
        return operator.indexOf(rows, row)
    except ValueError:
        return -1


def column_at(columns: Sequence[Column], widths: Sequence[int], x: int) -> Column | None:
    """The column drawn at cell `x` of a line (a column owns the gap after it), or None."""
    left = MARK_WIDTH
    for column, width in zip(columns, widths, strict=True):
        if left <= x < left + width + COLUMN_GAP:
            return column
        left += width + COLUMN_GAP
    return None
