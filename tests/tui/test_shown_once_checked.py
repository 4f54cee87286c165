"""A backend's pages wait until its store id has been compared (`ShownOnceChecked`)."""

from __future__ import annotations

from typing import cast

from ckpt_tui.catalog.snapshot import Snapshot
from ckpt_tui.tui.screens.browse.snapshot_feed import ShownOnceChecked


def snapshots(count: int) -> list[Snapshot]:
    return [cast(Snapshot, object()) for _ in range(count)]


def test_pages_before_the_check_are_held_and_only_the_latest_is_shown_at_it() -> None:
    shown: list[Snapshot] = []
    gate = ShownOnceChecked(shown.append)
    first, second, third = snapshots(3)
    gate.page(first)
    gate.page(second)
    assert shown == []
    gate.checked()
    assert shown == [second]  # each holds every page so far: the latest is enough
    gate.page(third)
    assert shown == [second, third]


def test_a_check_with_no_page_yet_shows_nothing() -> None:
    shown: list[Snapshot] = []
    gate = ShownOnceChecked(shown.append)
    gate.checked()
    assert shown == []


def test_a_held_page_is_dropped_when_the_whole_list_is_in_before_the_check() -> None:
    shown: list[Snapshot] = []
    gate = ShownOnceChecked(shown.append)
    (page,) = snapshots(1)
    gate.page(page)
    gate.checked(show_held=False)
    assert shown == []
