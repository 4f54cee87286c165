"""The one plural rule of every message (dialogs, keep-policy preview, prune's plan), and the
one way a long path is fitted into a line."""

from __future__ import annotations

from rich.cells import cell_len

from ckpt_tui.words import count_of, plural, shorten_middle


def test_one_is_singular_and_everything_else_plural() -> None:
    assert [plural(n, "run") for n in (0, 1, 2)] == ["runs", "run", "runs"]
    assert plural(1, "is public", "are public") == "is public"
    assert plural(3, "is public", "are public") == "are public"


def test_counts_are_grouped_by_thousands() -> None:
    assert count_of(1, "checkpoint") == "1 checkpoint"
    assert count_of(1024, "checkpoint") == "1,024 checkpoints"
    assert count_of(2, "is", "are") == "2 are"


LONG_PATH = "/home/me/a-rather-long-folder-name/for-the-training-box/outputs/checkpoints-store"


def test_a_path_that_fits_is_whole_and_a_long_one_keeps_its_start_and_more_of_its_end() -> None:
    assert shorten_middle(LONG_PATH, len(LONG_PATH)) == LONG_PATH
    short = shorten_middle(LONG_PATH, 40)
    assert cell_len(short) == 40
    head, tail = short.split("…")
    assert LONG_PATH.startswith(head) and LONG_PATH.endswith(tail)
    assert tail.endswith("/outputs/checkpoints-store") and len(tail) > len(head) > 0


def test_wide_characters_take_two_cells_each() -> None:
    path = "/数据/" + "模型" * 20 + "/store"
    short = shorten_middle(path, 21)
    assert cell_len(short) <= 21 and short.endswith("/store") and short.startswith("/数")
