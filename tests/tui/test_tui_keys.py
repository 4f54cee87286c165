"""Keys do what the screen says: every dialog driven by the keys a person types, from the focus
the screen really has, against a real server whose state is checked afterwards."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from ckpt_tui.backends.fleet_view import row_key, run_key
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.sizes import format_total, total
from ckpt_tui.tui.app import CkptApp
from ckpt_tui.tui.screens.browse_screen import BrowseScreen
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog
from ckpt_tui.tui.screens.publish_dialog import PublishDialog
from ckpt_tui.tui.screens.quit_dialog import QuitDialog
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog
from ckpt_tui.tui.widgets.fitting_footer import FittingFooter
from tests.support.demo_fixture import ServedDemo
from tests.support.faulty_app import FaultyApp
from tests.support.tui import (
    checkpoints,
    make_app,
    runs,
    screen_line,
    screen_of,
    screen_text,
    settle,
    shows_path,
)


def highlighted(app: CkptApp) -> CheckpointRow:
    row = checkpoints(app).cursor_value
    assert row is not None
    return row


async def onto_llama_3b_final_state(pilot: Pilot[None], app: CkptApp) -> CheckpointRow:
    """As in the issue: tab to the runs, down twice to full/llama-3b-ft, tab back, End."""
    await settle(pilot)
    await pilot.press("tab", "down", "down", "tab", "end")
    await pilot.pause()
    row = highlighted(app)
    assert (row.run_name, row.name, row.kind) == ("full/llama-3b-ft", "final", "state")
    return row


async def test_typing_delete_in_the_dialog_deletes_and_nothing_else(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await onto_llama_3b_final_state(pilot, app)
        before = demo.store.get_checkpoint(row.run_id, row.checkpoint_id).expires_at
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)
        await pilot.press(*"delet")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)  # no letter closed it
        assert demo.holds(row)
        assert demo.store.get_checkpoint(row.run_id, row.checkpoint_id).expires_at == before
        await pilot.press("e", "enter")
        await settle(pilot)
        assert not demo.holds(row)
        assert isinstance(app.screen, BrowseScreen)  # no TTL dialog opened behind it
        assert [entry.action for entry in app.session_log.entries] == ["delete"]


async def test_tab_reaches_the_word_box_and_letters_on_buttons_do_not_type(
    demo: ServedDemo,
) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await onto_llama_3b_final_state(pilot, app)
        await pilot.press("d")
        await pilot.pause()
        seen = []
        for _ in range(3):  # the box, Cancel, Expire (Delete is off until the word is typed)
            focused = app.focused
            seen.append(None if focused is None else focused.id)
            await pilot.press("tab")
        assert seen[0] == "delete-word"
        assert "delete-cancel" in seen and "delete-expire" in seen
        assert app.focused is not None and app.focused.id == "delete-word"  # tab came round
        await pilot.press(*"delete", "enter")
        await settle(pilot)
        assert not demo.holds(row)


async def test_keys_typed_right_after_d_go_into_the_box(demo: ServedDemo) -> None:
    """One burst, as over SSH: the dialog is up before the next key is handled."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await onto_llama_3b_final_state(pilot, app)
        await pilot.press("d", *"delete", "enter")
        await settle(pilot)
        assert not demo.holds(row)
        assert isinstance(app.screen, BrowseScreen)
        assert screen_of(app).changes.running is None


async def test_p_asks_with_cancel_focused_and_enter_changes_nothing(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        row = highlighted(app)  # the first checkpoint of the first run, where focus starts
        assert not row.public
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PublishDialog)
        text = screen_text(app)
        assert "Publish 1 checkpoint?" in text and "Becomes public:" in text
        assert f"on {app.describe_backend()}" in text
        await pilot.press("enter", "p")  # Cancel is focused; p is no key in the dialog
        await settle(pilot)
        assert isinstance(app.screen, PublishDialog)  # the second p asked again
        await pilot.press("escape")
        await settle(pilot)
        assert not demo.store.get_checkpoint(row.run_id, row.checkpoint_id).public
        assert app.session_log.entries == []
        await pilot.press("p", "y")
        await settle(pilot)
        assert demo.store.get_checkpoint(row.run_id, row.checkpoint_id).public


async def test_q_and_ctrl_c_ask_while_an_action_runs(
    faulty_demo: tuple[ServedDemo, FaultyApp],
) -> None:
    demo, faulty = faulty_demo
    gate = faulty.hold(method="PUT")  # the TTL change waits on the server until released
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            row = highlighted(app)
            await pilot.press("t", "1", "enter")  # the first preset: extend by 1 day
            await pilot.pause()
            assert screen_of(app).changes.running is not None
            for key in ("q", "ctrl+c"):
                await pilot.press(key)
                await pilot.pause()
                assert isinstance(app.screen, QuitDialog)
                text = screen_text(app)
                assert "Setting the TTL of 0 of 1" in text
                assert app.describe_backend() in text
                await pilot.press("enter")  # "Keep running" is focused
                await pilot.pause()
                assert isinstance(app.screen, BrowseScreen) and app.is_running
            gate.set()
            await settle(pilot)
            expires = demo.store.get_checkpoint(row.run_id, row.checkpoint_id).expires_at
            assert expires != row.expires_at  # the action went on to the end
            await pilot.press("q")  # nothing runs now: q quits at once
            await pilot.pause()
            assert not app.is_running
    finally:
        gate.set()


async def test_ctrl_c_in_a_text_box_copies_and_never_quits(demo: ServedDemo) -> None:
    """As in Textual's text boxes: ctrl+c there copies the selection (or only says so);
    outside a text box it quits as q does."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"llama", "ctrl+c")
        await pilot.pause()
        assert app.is_running and isinstance(app.focused, Input)
        assert app.focused.value == "llama"
        assert any("ctrl+q quits" in n.message for n in app._notifications)
        await pilot.press("shift+home", "ctrl+c")  # select what was typed, then copy it
        await pilot.pause()
        assert app.is_running and app.clipboard == "llama"
        await pilot.press("escape", "ctrl+c")  # out of the box: ctrl+c quits
        await pilot.pause()
        assert not app.is_running


async def test_y_in_the_quit_dialog_quits(faulty_demo: tuple[ServedDemo, FaultyApp]) -> None:
    demo, faulty = faulty_demo
    gate = faulty.hold(method="DELETE")
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("down", "d", "y")  # a plain sampler checkpoint: y deletes
            await pilot.pause()
            assert screen_of(app).changes.running is not None
            await pilot.press("q")
            await pilot.pause()
            assert app.is_running and isinstance(app.screen, QuitDialog)
            assert "Deleting 0 of 1" in screen_text(app)
            await pilot.press("y")
            await pilot.pause()
            assert not app.is_running
    finally:
        gate.set()


def footer_and_header(app: CkptApp) -> tuple[str, str]:
    lines = screen_text(app).splitlines()
    header = next(line for line in lines if "checkpoints ·" in line)
    footer = next(line for line in reversed(lines) if line.strip())
    return header, footer


FOOTER_HINTS = (
    "q Quit",
    "? Help",
    "p Publish",
    "t TTL",
    "d Delete",
    "D Download",
    "K Keep policy",
    "/ Filter",
    "s Sort",
    "v View",
    "r Refresh",
    "c Copy path",
)


def whole_hints(footer: str) -> bool:
    """Whether the footer's hints are the first few of FOOTER_HINTS, each key with its label
    (compared without blanks: the compact footer's gaps are margins, no text in a screenshot)."""
    shown = "".join(footer.split())
    wholes = ["".join("".join(FOOTER_HINTS[:n]).split()) for n in range(len(FOOTER_HINTS) + 1)]
    return shown in wholes


def footer_line(app: CkptApp) -> str:
    return next(line for line in reversed(screen_text(app).splitlines()) if line.strip())


@pytest.mark.parametrize("size", [(59, 15), (80, 24), (100, 30), (120, 36)])
async def test_the_footer_shows_whole_hints_and_nothing_past_the_palette_key(
    demo: ServedDemo, size: tuple[int, int]
) -> None:
    """At 80 columns it ended "^p palettee", at 59 "palettet", at 100 "c " with no label."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.resize_terminal(*size)
        await settle(pilot)
        hints, palette = footer_line(app).split("▏")
        assert palette.strip() == "^p palette"
        assert whole_hints(hints) and "d Delete" in hints, hints
        if size[0] >= 120:  # the actions whole, and browsing up to refresh (copy: ? and ^p)
            assert "D Download" in hints and "r Refresh" in hints


async def test_a_fit_before_the_shown_hints_are_laid_out_waits_for_them(
    demo: ServedDemo,
) -> None:
    """On a busy machine the fit after a resize can run before the hints it showed again
    are laid out: seen at x 0 they stayed shown past the palette key ("^p paletteo")."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(59, 15)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(FittingFooter)
        assert any(not hint.display for hint in footer.children)  # the last fit hid some
        for hint in footer.children:  # as a resize does, then its fit before the layout
            hint.display = True
        footer.fit()
        await settle(pilot)
        hints, palette = footer_line(app).split("▏")
        assert palette.strip() == "^p palette"
        assert whole_hints(hints), hints


@pytest.mark.parametrize("key", ["d", "t"])
async def test_the_footer_behind_a_dialog_shows_whole_hints(demo: ServedDemo, key: str) -> None:
    """With a dialog open at 80x24 the dimmed footer behind it ended "^p palettee"."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, (DeleteDialog, TtlDialog))
        hints, palette = footer_line(app).split("▏")
        assert palette.strip() == "^p palette"
        assert whole_hints(hints) and "d Delete" in hints, hints


@pytest.mark.parametrize("readonly", [True, False])
async def test_readonly_shows_in_the_header_and_drops_changes_from_the_footer(
    demo: ServedDemo, readonly: bool
) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock, readonly=readonly)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        header, footer = footer_and_header(app)
        assert ("READ-ONLY" in header) == readonly
        for hint in ("p Publish", "t TTL", "d Delete"):
            assert (hint in footer) != readonly, footer
        assert "/ Filter" in footer
        if readonly:
            row = highlighted(app)
            await pilot.press("d")  # the key still says why it does nothing
            await settle(pilot)
            assert isinstance(app.screen, BrowseScreen)
            assert any("Read-only mode" in n.message for n in app._notifications)
            assert demo.store.get_checkpoint(row.run_id, row.checkpoint_id).size_bytes


async def test_a_new_sort_shows_its_first_rows(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2", "end")  # all checkpoints, cursor on the last row
        await settle(pilot)
        table = checkpoints(app)
        assert table.cursor_row == table.row_count - 1
        await pilot.press("s")  # size, smallest first
        await pilot.pause()
        assert table.cursor_row == 0 and table.scroll_y == 0
        await pilot.press("end", "S")  # size, biggest first
        await pilot.pause()
        assert table.cursor_row == 0 and table.scroll_y == 0
        biggest = max(row.size.bytes or 0 for row in table.rows)
        assert highlighted(app).size.bytes == biggest
        assert table.rows[0].size.bytes == biggest


async def test_the_session_log_names_each_checkpoint_and_is_kept_in_a_file(
    faulty_demo: tuple[ServedDemo, FaultyApp], state_home: Path
) -> None:
    demo, faulty = faulty_demo
    faulty.fail_names({"000100"}, status=403)  # 403 is not retried
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("space", "space", "space")  # each marks and moves down
        marked = [row for row in checkpoints(app).rows[:3]]
        assert checkpoints(app).marks == {row_key(row) for row in marked}
        await pilot.press("d", "y")
        await settle(pilot)
        gone = [row for row in marked if not demo.holds(row)]
        failed = [row for row in marked if demo.holds(row)]
        assert [row.name for row in failed] == ["000100"] and len(gone) == 2
        await pilot.press("L")
        await pilot.pause()
        text = screen_text(app)
        for row in gone:
            assert f"✓ {row.tinker_path}  {row.run_name}" in text
        assert f"✗ {failed[0].tinker_path}  {failed[0].run_name}:" in text
        shown = re.search(r"Also kept in ([^\s│]+)", screen_line(app, "Also kept in "))
        assert shown is not None and shown[1].endswith("/ckpt-tui/actions.log")
        assert shows_path(shown[1], str(state_home / "ckpt-tui" / "actions.log"))
    logged = (state_home / "ckpt-tui" / "actions.log").read_text()
    assert "delete  Deleted 2 of 3; 1 failed  on " in logged
    for row in gone:
        assert f"ok      {row.tinker_path}  run {row.run_name}" in logged
    line = f"FAILED  {failed[0].tinker_path}  run {failed[0].run_name}  checkpoint"
    assert line in logged and "injected failure for checkpoint 000100" in logged


async def test_a_deleted_checkpoint_is_not_missing_and_the_cursor_stays(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        run = runs(app).cursor_value
        assert run is not None
        missing_before = run.missing_count
        await pilot.press("down", "down")
        row = highlighted(app)
        following = checkpoints(app).rows[3]
        await pilot.press("d", "y")
        await settle(pilot)
        assert not demo.holds(row)
        table = checkpoints(app)
        assert table.cursor_row == 2 and highlighted(app).tinker_path == following.tinker_path
        for _ in range(2):  # as the delete left it, then after a refresh from the server
            paths = [shown.tinker_path for shown in table.rows]
            assert row.tinker_path not in paths  # the training log still names it
            run = runs(app).cursor_value
            assert run is not None and run.missing_count == missing_before
            await pilot.press("r")
            await settle(pilot)


async def test_the_filter_counts_matches_and_expiring_soon_counts_its_rows(
    demo: ServedDemo,
) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"000100", "enter")
        await settle(pilot)
        catalog = screen_of(app).catalog
        assert catalog is not None
        matching = len(checkpoints(app).rows)
        assert 0 < matching < len(catalog.rows)
        assert f"{matching} of {len(catalog.rows)} match" in screen_text(app)
        await pilot.press("escape", "3")
        await settle(pilot)
        expiring = list(checkpoints(app).rows)
        size = format_total(total(row.size for row in expiring))
        assert expiring and f"{len(expiring)} expiring · {size}" in screen_text(app)


def run_names(app: CkptApp) -> list[str]:
    return [run.display_name for run in runs(app).rows]


async def test_the_runs_pane_sorts_by_keys_and_by_header_clicks(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        listed = run_names(app)
        await pilot.press("tab", "end")  # to the runs pane, on its last run
        await pilot.press("s")  # runs: biggest first
        await pilot.pause()
        table = runs(app)
        sizes = [run.size.bytes for run in table.rows]
        assert sizes == sorted(sizes, reverse=True) and table.cursor_row == 0
        assert "runs biggest first" in screen_text(app)
        first = table.cursor_value
        assert first is not None and screen_of(app).state.run_key == run_key(first)
        await pilot.press("S")  # smallest first
        await pilot.pause()
        assert [run.size.bytes for run in table.rows] == sorted(sizes)
        await pilot.press("s")  # newest first
        await pilot.pause()
        assert "runs newest first" in screen_text(app)
        header = table.render_line(0).text
        await pilot.click("#runs", offset=(header.index("Run"), 0))
        await pilot.pause()
        assert run_names(app) == sorted(listed, key=str.lower)
        assert table.render_line(0).text.split()[1] == "▲"  # "Run ▲"
        await pilot.click("#runs", offset=(header.index("Run"), 0))  # again: reversed
        await pilot.pause()
        assert run_names(app) == sorted(listed, key=str.lower, reverse=True)
        await pilot.click("#runs", offset=(header.index("Next expiry"), 0))
        await pilot.pause()
        expiries = [run.soonest_expiry for run in table.rows if run.soonest_expiry]
        assert expiries == sorted(expiries) and table.cursor_row == 0


async def test_a_click_on_a_checkpoint_header_sorts_by_it(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        header = checkpoints(app).render_line(0).text
        await pilot.click("#checkpoints", offset=(header.index("Size"), 0))
        await pilot.pause()
        assert screen_of(app).state.sort.key == "size"
        await pilot.click("#checkpoints", offset=(header.index("Size"), 0))
        await pilot.pause()
        sizes = [row.size.bytes or 0 for row in checkpoints(app).rows if not row.is_missing]
        assert screen_of(app).state.sort.reverse and sizes == sorted(sizes, reverse=True)
        assert checkpoints(app).cursor_row == 0


@pytest.mark.parametrize("query", ["expire", "ttl"])
async def test_the_palette_finds_the_ttl_action(demo: ServedDemo, query: str) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *query)
        await settle(pilot)
        assert "TTL: set, extend or expire (t)" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TtlDialog)


async def test_the_palette_lists_keys_and_quit_once(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Keys" not in titles and "Quit" not in titles
        assert titles.count("Quit (q)") == 1 and "Help (?)" in titles


async def test_an_emptied_run_shows_a_dash_and_details_say_highlighted(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert "step 50 highlighted" in screen_text(app)  # the loss curve's marker
        await pilot.press("tab", "down", "tab", "ctrl+a", "d", "y")  # empty the second run
        await settle(pilot)
        run = runs(app).cursor_value
        assert run is not None and run.stored_rows == []
        assert demo.store.list_run_checkpoints(run.run_id) == []
        line = runs(app).render_line(runs(app).cursor_row + 1).text
        assert run.display_name in line and "0 Bytes" not in line and " – " in line


async def test_keep_policy_checkboxes_show_ticked_and_unticked_apart(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("K")
        await pilot.pause()
        for _ in range(30):  # tab along the form to "keep final", as a person would
            if app.focused is not None and app.focused.id == "kp-final":
                break
            await pilot.press("tab")
        box = app.focused
        assert box is not None and box.id == "kp-final"
        ticked = box.render().plain  # type: ignore[union-attr]
        await pilot.press("space")
        await pilot.pause()
        unticked = box.render().plain  # type: ignore[union-attr]
        assert "X" in ticked and "X" not in unticked
        assert ticked.replace("X", " ") == unticked  # only the glyph differs
