"""The one plural rule of every message (dialogs, keep-policy preview, prune's plan)."""

from __future__ import annotations

from ckpt_tui.words import count_of, plural


def test_one_is_singular_and_everything_else_plural() -> None:
    assert [plural(n, "run") for n in (0, 1, 2)] == ["runs", "run", "runs"]
    assert plural(1, "is public", "are public") == "is public"
    assert plural(3, "is public", "are public") == "are public"


def test_counts_are_grouped_by_thousands() -> None:
    assert count_of(1, "checkpoint") == "1 checkpoint"
    assert count_of(1024, "checkpoint") == "1,024 checkpoints"
    assert count_of(2, "is", "are") == "2 are"
