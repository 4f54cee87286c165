"""The browse screen, driven with Pilot against a real server holding the demo."""

from __future__ import annotations

import json
from datetime import timedelta

from textual import events
from textual.message import Message

from ckpt_tui.backends.fleet_view import run_key
from ckpt_tui.catalog import CheckpointRow, RowState
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.commands import ACTION_COMMANDS, BROWSE_COMMANDS
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.screens.help_dialog import HelpDialog, help_sections
from tests.support.demo_fixture import ServedDemo
from tests.support.faulty_app import FaultyApp
from tests.support.tui import (
    backend_error,
    checkpoints,
    make_app,
    runs,
    screen_of,
    screen_text,
    settle,
    show_all_checkpoints,
    shown,
    sort_key,
)
from tests.support.waiting import until


async def test_runs_and_the_highlighted_runs_checkpoints_are_shown(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert runs(app).row_count == 6
        first_run = runs(app).rows[0]
        assert {row.run_id for row in shown(app)} == {first_run.run_id}
        assert app.focused is checkpoints(app)
        await pilot.press("shift+tab")
        assert app.focused is runs(app)
        await pilot.press("down")
        await settle(pilot)
        second_run = runs(app).rows[1]
        assert {row.run_id for row in shown(app)} == {second_run.run_id}
        assert screen_of(app).state.run_key == run_key(second_run)


async def test_j_and_k_move_the_checkpoint_cursor(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")  # all checkpoints: plenty of rows
        await settle(pilot)
        table = checkpoints(app)
        assert app.focused is table
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("j", "j", "j", "k")
        assert table.cursor_row == 2
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1


def cursor_on_screen(app: CkptApp) -> bool:
    """Whether the checkpoints table shows its highlighted row (line 0 is the header)."""
    table = checkpoints(app)
    top, page = round(table.scroll_y), table.scrollable_content_region.height - 1
    return top <= table.cursor_row < top + page


async def test_after_3_then_2_the_highlighted_row_is_in_sight_and_j_steps_one(
    demo: ServedDemo,
) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        soonest = checkpoints(app).cursor_value
        await pilot.press("2")
        await settle(pilot)
        table = checkpoints(app)
        assert table.cursor_value is soonest  # the same row, further down this list
        assert table.cursor_row >= table.scrollable_content_region.height
        assert cursor_on_screen(app)
        top = round(table.scroll_y)
        await pilot.press("j")
        await settle(pilot)
        assert cursor_on_screen(app) and round(table.scroll_y) - top <= 1


async def test_missing_and_untracked_rows_are_shown_and_missing_dimmed(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await show_all_checkpoints(pilot)
        states = {row.state for row in shown(app)}
        assert states == {RowState.TRACKED, RowState.UNTRACKED, RowState.MISSING}
        missing = [row for row in shown(app) if row.is_missing]
        assert len(missing) == 11
        table = checkpoints(app)
        assert table._row_style is not None and table._row_style(missing[0]) == "dim"


async def test_filter_narrows_rows_and_escape_clears_it(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await show_all_checkpoints(pilot)
        everything = checkpoints(app).row_count
        await pilot.press("slash", *"rolling")
        await settle(pilot)
        assert 0 < checkpoints(app).row_count < everything
        assert all("rolling" in row.haystack for row in shown(app))
        await pilot.press("enter")  # keeps the filter, back to the table
        assert app.focused is checkpoints(app)
        assert screen_of(app).state.filter_text == "rolling"
        await pilot.press("escape")
        await settle(pilot)
        assert checkpoints(app).row_count == everything


async def test_keys_typed_in_one_burst_after_slash_go_into_the_filter(demo: ServedDemo) -> None:
    """Over SSH a burst of keys arrives at once: "/r1" must filter by "r1", not refresh (r) and
    switch to the runs view (1) because the filter box took focus one message too late."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await show_all_checkpoints(pilot)
        burst(app, "slash", "r", "1")
        await settle(pilot)
        state = screen_of(app).state
        assert state.filter_text == "r1"
        assert state.view == "all"
        await pilot.press("slash", "w")  # inside the box, "/" is just a character
        assert screen_of(app).state.filter_text == "r1/w"


def burst(app: CkptApp, *keys: str) -> None:
    """Post keys at once, as the terminal driver does with one read of several keys."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


async def test_a_view_key_then_slash_in_one_burst_switches_view_then_filters(
    demo: ServedDemo,
) -> None:
    """In tmux "2/" arrives in one read: the 2 was lost (the priority "/" ran first)."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        burst(app, "2", "slash", *"rl")
        await settle(pilot)
        state = screen_of(app).state
        assert state.view == "all" and state.filter_text == "rl"


async def test_enter_or_escape_then_j_in_one_burst_moves_the_cursor(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await show_all_checkpoints(pilot)
        await pilot.press("g")  # the top row; every row's path contains "tinker"
        burst(app, "slash", *"tinker", "enter", "j")
        # The box hands a key it got after losing focus back to the app: wait for it, as
        # a queued key is neither a worker nor a load that settle() waits for.
        await until(lambda: checkpoints(app).cursor_row == 1, pilot.pause)
        await settle(pilot)
        state = screen_of(app).state
        assert state.filter_text == "tinker"  # kept, and the "j" went to the table
        assert app.focused is checkpoints(app)
        burst(app, "slash", "x", "escape", "j")
        await until(lambda: checkpoints(app).cursor_row == 2, pilot.pause)
        await settle(pilot)
        assert screen_of(app).state.filter_text == ""  # cleared; the "j" went to the table
        assert app.focused is checkpoints(app)


async def test_filter_matches_metadata_and_runs_pane_follows(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"note=notebook")
        await settle(pilot)
        assert runs(app).row_count == 1  # only the untracked run has that metadata
        assert {row.state for row in shown(app)} == {RowState.UNTRACKED}


def sizes_of(rows: list[CheckpointRow]) -> list[int]:
    return [row.size.bytes for row in rows if row.size.bytes is not None]


async def test_each_sort_and_reverse(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await show_all_checkpoints(pilot)
        created = [row.created for row in shown(app) if row.created is not None]
        assert sort_key(app) == "created" and created == sorted(created)
        await pilot.press("s")
        assert sort_key(app) == "size"
        assert sizes_of(shown(app)) == sorted(sizes_of(shown(app)))
        await pilot.press("S")
        assert sizes_of(shown(app)) == sorted(sizes_of(shown(app)), reverse=True)
        await pilot.press("S", "s")
        expiries = [row.expires_at for row in shown(app) if row.expires_at is not None]
        assert sort_key(app) == "expiry" and expiries == sorted(expiries)
        await pilot.press("s")
        names = [(row.run_name.lower(), row.name.lower()) for row in shown(app)]
        assert sort_key(app) == "name" and names == sorted(names)
        await pilot.press("s")
        losses = [row.metrics["eval_loss"] for row in shown(app) if "eval_loss" in row.metrics]
        assert sort_key(app) == "metric" and losses == sorted(losses)
        assert "eval_loss" not in shown(app)[-1].metrics  # rows without the metric go last


async def test_expiring_view_lists_soonest_first_within_the_window(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        now = demo.clock.now()
        rows = shown(app)
        expiries = [row.expires_at for row in rows]
        assert rows and all(
            e is not None and now < e <= now + timedelta(hours=24) for e in expiries
        )
        assert expiries == sorted(expiries)  # type: ignore[type-var]
        within_day = len(rows)
        await pilot.press("w")  # 3 days
        await settle(pilot)
        assert checkpoints(app).row_count > within_day
        await pilot.press("1")
        await settle(pilot)
        assert runs(app).display


async def test_c_copies_the_highlighted_tinker_path(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("j", "c")
        row = checkpoints(app).cursor_value
        assert row is not None and app.clipboard == row.tinker_path
        assert app.clipboard.startswith("tinker://")


async def test_help_lists_every_key(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpDialog)
        assert "Copy path" in screen_text(app)
        listed = [what for _title, entries in help_sections() for _keys, what in entries]
        for command in (*BROWSE_COMMANDS, *ACTION_COMMANDS):  # the whole list scrolls
            assert f"{command.title}: {command.help}" in listed
        await pilot.press("escape")
        assert isinstance(app.screen, BrowseScreen)


async def test_a_failing_backend_shows_what_to_do_and_r_retries(
    faulty_demo: tuple[ServedDemo, FaultyApp],
) -> None:
    demo, faulty = faulty_demo
    faulty.fail_first(1, status=401, path="/api/v1/training_runs")
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        error = backend_error(app)
        assert error is not None and "needs an API key" in error
        assert "Press r to retry" in checkpoints(app).empty_message
        assert "r retries" in screen_text(app)
        await pilot.press("r")
        await settle(pilot)
        assert backend_error(app) is None and runs(app).row_count == 6


async def test_user_text_is_never_read_as_markup(demo: ServedDemo) -> None:
    untracked_run = next(
        run
        for run in demo.store.list_runs()[0]
        if run.model_owner == "demo" and run.base_model.endswith("70B")
    )
    odd = demo.paths.logs / "exp[red]x" / "run[bold]1"
    odd.mkdir(parents=True)
    path = f"tinker://{untracked_run.training_run_id}/sampler_weights/probe-1"
    (odd / "checkpoints.jsonl").write_text(
        json.dumps({"name": "[b]p", "sampler_path": path}) + "\n"
    )
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert "exp[red]x/run[bold]1" in screen_text(app)


async def test_work_ending_as_the_screen_goes_touches_no_pane(demo: ServedDemo) -> None:
    """A load, a latency check or a thread's callback can end after Textual removed a closing
    screen's panes but before it cancels the screen's workers (seen as NoMatches('#checkpoints')
    as a busy machine's app quit). That moment is caught here exactly, as the screen, its panes
    gone, unmounts: what such work does then must do nothing, and raise nothing."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    screens: list[BrowseScreen] = []
    caught: list[str] = []
    failures: list[Exception] = []

    def as_the_screen_goes(message: Message) -> None:
        if not screens or caught:
            return
        screen = screens[0]
        if screen.is_running or screen.children:
            return
        caught.append(type(message).__name__)
        try:
            screen.fleet = screen.fleet  # a load or latency check showing its answer
            screen.show_complete(screen.fleet)  # a refresh's, a change's, a log's rows
            screen.update_details()  # a metrics.jsonl read in a thread
        except Exception as exc:  # raised here, it would only be logged by the teardown
            failures.append(exc)

    async with app.run_test(size=(120, 36), message_hook=as_the_screen_goes) as pilot:
        await settle(pilot)
        screens.append(screen_of(app))
    assert caught  # the moment came
    assert failures == []


async def test_polling_and_log_growth_refresh_keeping_filter_and_cursor(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock, poll_interval=0.3, log_check_interval=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"llama-8b", "enter")
        await pilot.press("j", "j")
        cursor_key = checkpoints(app).cursor_value
        assert cursor_key is not None
        victim = next(row for row in shown(app) if row.name == "000900" and row.kind == "state")
        demo.store.delete_checkpoint(victim.run_id, victim.checkpoint_id)
        log = demo.paths.logs / "sl/llama-8b-tulu3/checkpoints.jsonl"
        extra = {
            "name": "001100",
            "batch": 1100,
            "state_path": f"tinker://{victim.run_id}/weights/001100",
        }
        with log.open("a") as handle:
            handle.write(json.dumps(extra) + "\n")
        for _ in range(40):
            await pilot.pause(0.1)
            names = {(row.name, row.state) for row in shown(app)}
            if ("001100", RowState.MISSING) in names and ("000900", RowState.MISSING) in names:
                break
        assert ("001100", RowState.MISSING) in names
        assert ("000900", RowState.MISSING) in names  # deleted on the server, still in the log
        assert screen_of(app).state.filter_text == "llama-8b"
        current = checkpoints(app).cursor_value
        assert current is not None and current.tinker_path == cursor_key.tinker_path
