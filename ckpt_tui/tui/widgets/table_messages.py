"""Messages posted by `FastTable` (reachable as `FastTable.Highlighted` etc.).

Each uses the "fast_table" namespace, so handlers are named `on_fast_table_highlighted`,
`on_fast_table_selected`, `on_fast_table_header_clicked` and `on_fast_table_marks_changed`.
They name their sender as a plain `Widget`, so this module does not import the table's.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from textual.message import Message
from textual.widget import Widget


class TableMessage(Message, namespace="fast_table"):
    """Base for FastTable messages: carries the sending table as `table` and `control`."""

    def __init__(self, table: Widget) -> None:
        super().__init__()
        self.table = table

    @property
    def control(self) -> Widget:
        """The table that sent this message (lets `@on(..., "#selector")` match it)."""
        return self.table


class Highlighted(TableMessage, namespace="fast_table"):
    """The cursor moved to another row, or the rows under it were replaced.

    `row_index` is -1 (`NO_ROW`) and `row` is None when the table became empty.
    """

    def __init__(self, table: Widget, row_index: int, row: Any) -> None:
        super().__init__(table)
        self.row_index = row_index
        self.row = row


class Selected(TableMessage, namespace="fast_table"):
    """Enter (or a double click) on the cursor row."""

    def __init__(self, table: Widget, row_index: int, row: Any) -> None:
        super().__init__(table)
        self.row_index = row_index
        self.row = row


class HeaderClicked(TableMessage, namespace="fast_table"):
    """A column header was clicked; the app may re-sort and call `set_sort_indicator`."""

    def __init__(self, table: Widget, column_key: str) -> None:
        super().__init__(table)
        self.column_key = column_key


class MarksChanged(TableMessage, namespace="fast_table"):
    """The set of marked row keys changed; `marks` is the new set."""

    def __init__(self, table: Widget, marks: frozenset[Hashable]) -> None:
        super().__init__(table)
        self.marks = marks
