"""Reusable Textual widgets for the ckpt-tui app."""

from __future__ import annotations

from ckpt_tui.tui.widgets.fast_table import NO_ROW, FastTable
from ckpt_tui.tui.widgets.table_layout import CELL_STYLES, Cell, Column

__all__ = ["CELL_STYLES", "NO_ROW", "Cell", "Column", "FastTable"]
