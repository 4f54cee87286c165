"""Words for messages: the one place that says "1 run" but "2 runs", and that fits a long
path into a line."""

from __future__ import annotations

from rich.cells import cell_len, get_character_cell_size

ELLIPSIS = "…"


def plural(count: int, one: str, many: str | None = None) -> str:
    """`one` for exactly one thing, else `many` (by default `one` + "s"): 'is' / 'are'."""
    if count == 1:
        return one
    return one + "s" if many is None else many


def count_of(count: int, one: str, many: str | None = None) -> str:
    """The count and its word: '1 run', '2 runs', '1,024 checkpoints'."""
    return f"{count:,} {plural(count, one, many)}"


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` terminal cells: whole if it fits, else its start and its end
    around "…" ("/home/me/…/outputs/store"). The end gets two thirds: in a path, the
    folder names that tell stores apart are at the end."""
    if cell_len(text) <= width:
        return text
    room = max(width - 1, 0)
    head = _cells_from_start(text, room // 3)
    tail = _cells_from_end(text, room - cell_len(head))
    return f"{head}{ELLIPSIS}{tail}"


def _cells_from_start(text: str, width: int) -> str:
    """The longest start of `text` that takes at most `width` cells."""
    used = 0
    for index, char in enumerate(text):
        used += get_character_cell_size(char)
        if used > width:
            return text[:index]
    return text


def _cells_from_end(text: str, width: int) -> str:
    """The longest end of `text` that takes at most `width` cells."""
    reversed_start = _cells_from_start(text[::-1], width)
    return reversed_start[::-1]
