"""When a load still reading pages joins its rows so far for a view (`partial_views.py`)."""

from __future__ import annotations

from ckpt_tui.catalog.partial_views import (
    PARTIAL_EVERY,
    PartialSpacing,
    PartialViews,
)
from tests.support.faulty_app import VirtualClock


def test_the_first_page_is_joined_for_a_view_only_when_more_pages_are_to_come() -> None:
    ticks = VirtualClock()
    whole = PartialViews(PartialSpacing(ticks))
    whole.arrived(1_200)
    assert not whole.due(1_200, 1_200)  # the whole list's own join follows at once
    first = PartialViews(PartialSpacing(ticks))
    first.arrived(10_000)
    assert first.due(10_000, 100_000)


def test_after_the_first_a_view_waits_for_doubled_rows_and_a_slow_rest() -> None:
    ticks = VirtualClock()
    views = PartialViews(PartialSpacing(ticks))
    views.arrived(10_000)
    assert views.due(10_000, 100_000)
    ticks.now += 2 * PARTIAL_EVERY
    views.arrived(5_000)
    assert not views.due(15_000, 100_000)  # not doubled
    # 20,000 in 0.5 s: the other 80,000 come in about 2 s, worth a view
    views.arrived(5_000)
    assert views.due(20_000, 100_000)
    # 90,000 in 1 s: the last 10,000 come in about 0.1 s, under WORTH_A_VIEW
    ticks.now += 2 * PARTIAL_EVERY
    views.arrived(70_000)
    assert not views.due(90_000, 100_000)


def test_a_slow_list_gets_a_view_each_time_its_rows_double() -> None:
    ticks = VirtualClock()
    views = PartialViews(PartialSpacing(ticks))
    made = []
    for page in range(1, 100):  # 1,000 rows a second, of 100,000
        ticks.now += 1.0
        views.arrived(1_000)
        if views.due(page * 1_000, 100_000):
            made.append(page * 1_000)
    assert made == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000]


def test_loads_that_share_a_spacing_show_one_first_page_and_then_only_slow_lists() -> None:
    ticks = VirtualClock()
    spacing = PartialSpacing(ticks)
    one, two, three = PartialViews(spacing), PartialViews(spacing), PartialViews(spacing)
    for load in (one, two, three):
        load.arrived(10_000)
    assert one.due(10_000, 25_000)  # the first frame
    assert not two.due(10_000, 25_000)  # the screen would not show it sooner anyway
    ticks.now += PARTIAL_EVERY * 1.01
    # the screen shows rows: a list whose rest comes within WORTH_A_VIEW makes no view
    two.arrived(10_000)
    assert not two.due(20_000, 25_000)  # 5,000 left at 80,000 a second
    ticks.now += 2.0
    three.arrived(1_000)
    assert three.due(11_000, 25_000)  # 14,000 left at 4,900 a second: worth a view


def test_a_list_read_again_starts_its_views_over() -> None:
    ticks = VirtualClock()
    views = PartialViews(PartialSpacing(ticks))
    views.arrived(10_000)
    assert views.due(10_000, 100_000)
    views.read_again()
    ticks.now += 2 * PARTIAL_EVERY
    views.arrived(10_000)
    assert views.due(10_000, 100_000)  # a first view of the new reading


def test_views_of_slow_lists_are_at_least_the_spacing_apart() -> None:
    ticks = VirtualClock()
    spacing = PartialSpacing(ticks)
    one, two = PartialViews(spacing), PartialViews(spacing)
    one.arrived(1_000)
    assert one.due(1_000, 100_000)
    ticks.now += 10.0  # 1,000 in 10 s: both lists are slow
    two.arrived(1_000)
    assert two.due(1_000, 100_000)
    one.arrived(1_000)
    assert not one.due(2_000, 100_000)  # doubled and slow, but a view was just made
    ticks.now += PARTIAL_EVERY * 1.01
    assert one.due(2_000, 100_000)


def test_empty_pages_make_no_view_and_no_error() -> None:
    """A page may bring nothing while the list says it has more (it shrank meanwhile): there
    is no rate to judge the rest by, and nothing to show."""
    ticks = VirtualClock()
    spacing = PartialSpacing(ticks)
    shown, empty = PartialViews(spacing), PartialViews(spacing)
    shown.arrived(10)
    assert shown.due(10, 100)
    empty.arrived(0)
    ticks.now += 2.0
    assert not empty.due(0, 10)
