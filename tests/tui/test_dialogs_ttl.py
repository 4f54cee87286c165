"""The TTL dialog, driven by keys through a real Textual pilot: presets, typed values, refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from textual.widgets import Button

from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog, TtlPlan
from tests.support.dialogs import (
    NOW,
    WHERE,
    DialogApp,
    ckpt,
    many_rows,
    rows_of,
    static_text,
)

DAY = 86400
PAST, FUTURE, NEVER = (
    ("", "tinker://run-a/weights/past"),
    ("", "tinker://run-a/weights/future"),
    ("", "tinker://run-a/weights/never"),
)
"""Row keys: (backend, tinker path); these rows belong to the one, unnamed backend."""


def three_rows() -> list[CheckpointRow]:
    """Expired 5 hours ago, expiring in 2 days, and never expiring."""
    return rows_of(ckpt("past", -5), ckpt("future", 48), ckpt("never", None))


def ttl_app(rows: list[CheckpointRow] | None = None) -> DialogApp[TtlPlan | None]:
    chosen = three_rows() if rows is None else rows
    return DialogApp(lambda: TtlDialog(chosen, NOW, WHERE))


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("1", {PAST: DAY, FUTURE: 3 * DAY, NEVER: None}),
        ("2", {PAST: 7 * DAY, FUTURE: 9 * DAY, NEVER: None}),
        ("3", {PAST: 30 * DAY, FUTURE: 32 * DAY, NEVER: None}),
        ("4", {PAST: 3600, FUTURE: 3600, NEVER: 3600}),
        ("5", {PAST: None, FUTURE: None, NEVER: None}),
    ],
)
async def test_each_preset_key_then_enter_returns_its_plan(
    key: str, expected: dict[tuple[str, str], int | None]
) -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(key, "enter")
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and plan.ttl_for == expected
    for path, seconds in expected.items():
        expiry = None if seconds is None else NOW + timedelta(seconds=seconds)
        assert plan.expires_for[path] == expiry


async def test_preview_shows_each_result_and_that_never_stays_never() -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        preview = static_text(app, "#ttl-preview")
        assert "Extend by 7 days: 3 checkpoints" in static_text(app, "#ttl-summary")
        assert "expired 5h ago" in preview and "2025-01-08 00:00 UTC" in preview
        assert "in 2d" in preview and "2025-01-10 00:00 UTC" in preview
        assert "stays never" in preview
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


async def test_arrows_and_apply_button_choose_a_preset() -> None:
    app = ttl_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "down", "down", "down")  # preset 1, then on to 4
        await pilot.click("#ttl-apply")
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and plan.label == "Expire in 1 hour"
    assert set(plan.ttl_for.values()) == {3600}


async def test_typed_duration_sets_every_row_and_enter_applies_it() -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(*"36h", "enter")
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and plan.ttl_for == {PAST: 129600, FUTURE: 129600, NEVER: 129600}
    assert plan.label == "Expire in 1d12h"


async def test_typed_date_sets_that_date() -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(*"2025-01-03", "enter")
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and set(plan.ttl_for.values()) == {2 * DAY}
    assert set(plan.expires_for.values()) == {NOW + timedelta(days=2)}


@pytest.mark.parametrize(("typed", "reason"), [("5m", "out of range"), ("11y", "out of range")])
async def test_out_of_range_is_refused_with_the_reason(typed: str, reason: str) -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(*typed, "enter")
        await pilot.pause()
        error = static_text(app, "#ttl-error")
        assert reason in error and "between 1 hour and 10 years" in error
        assert app.screen.query_one("#ttl-apply", Button).disabled
        await pilot.click("#ttl-apply")
        await pilot.pause()
        assert app.results == []
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


async def test_unparsable_input_is_refused_and_fixing_it_applies() -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(*"soon", "enter")
        await pilot.pause()
        assert "cannot read 'soon'" in static_text(app, "#ttl-error")
        assert app.results == []
        await pilot.press(*["backspace"] * 4, *"2w", "enter")
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and set(plan.ttl_for.values()) == {14 * DAY}


async def test_extending_past_ten_years_names_the_checkpoint() -> None:
    rows = rows_of(ckpt("old", 24 * 365 * 10 - 24))
    app = ttl_app(rows)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("3", "enter")
        await pilot.pause()
        assert "old of run-a" in static_text(app, "#ttl-error")
        assert app.results == []


async def test_many_rows_list_the_first_eight_and_count_the_rest() -> None:
    app = ttl_app(many_rows(12))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        preview = static_text(app, "#ttl-preview")
        assert "000007" in preview and "000008" not in preview and "and 4 more" in preview


async def test_enter_in_an_empty_box_applies_nothing() -> None:
    app = ttl_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")  # the dialog opens in the empty box: nothing is shown
        await pilot.pause()
        assert app.results == []
        assert "Nothing chosen yet" in static_text(app, "#ttl-summary")
        await pilot.press("shift+tab", "enter")  # on the presets: enter applies the first
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and plan.label == "Extend by 1 day"


@pytest.mark.parametrize("before", [(), ("down",), ("down", "tab", "tab")])
async def test_a_typed_duration_never_picks_a_preset(before: tuple[str, ...]) -> None:
    """From the box, the preset list or a button: 36h is 36 hours, whatever its first digit."""
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(*before, *"36h")
        await pilot.pause()
        assert "Expire in 1d12h: 3 checkpoints" in static_text(app, "#ttl-summary")
        await pilot.press("enter")
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and set(plan.ttl_for.values()) == {36 * 3600}


async def test_a_space_typed_on_a_button_goes_into_the_box() -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(*"1d", "tab", *" 12h")  # tab: onto Cancel, where space would press it
        await pilot.pause()
        assert app.results == []
        await pilot.press("enter")
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and set(plan.ttl_for.values()) == {36 * 3600}


async def test_cancel_comes_before_apply_and_tab_reaches_them_in_that_order() -> None:
    app = ttl_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press(*"2w", "tab")
        await pilot.pause()
        assert app.focused is not None and str(app.focused.render()).strip() == "Cancel"
        await pilot.press("tab", "enter")  # Apply
        await pilot.pause()
    [plan] = app.results
    assert plan is not None and set(plan.ttl_for.values()) == {14 * DAY}
