"""Publish, TTL and delete from the TUI, checked against the real server's state afterwards."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from ckpt_tui.backends.fleet_view import row_key
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.sizes import format_bytes
from ckpt_tui.tui.screens.delete_dialog import DeleteDialog
from ckpt_tui.tui.screens.publish_dialog import PublishDialog
from ckpt_tui.tui.screens.session_log_dialog import SessionLogDialog
from ckpt_tui.tui.screens.ttl_dialog import TtlDialog
from tests.support.demo_fixture import ServedDemo
from tests.support.faulty_app import FaultyApp
from tests.support.tui import (
    checkpoints,
    find,
    highlight,
    loaded_on,
    make_app,
    screen_of,
    screen_text,
    settle,
    shown,
)


def is_public(demo: ServedDemo, row: CheckpointRow) -> bool:
    return demo.store.get_checkpoint(row.run_id, row.checkpoint_id).public


async def test_p_publishes_then_unpublishes(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "sl/llama-8b-tulu3", "000500", "sampler")
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PublishDialog)
        assert not is_public(demo, row)  # p only asks
        await pilot.press("y")
        await settle(pilot)
        assert is_public(demo, row)
        assert find(app, "sl/llama-8b-tulu3", "000500", "sampler").public  # the view follows
        await pilot.press("p")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert not is_public(demo, row)


async def test_a_mixed_selection_asks_which(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        public = find(app, "sl/qwen3-4b-chat", "final", "sampler")
        private = find(app, "sl/qwen3-4b-chat", "final", "state")
        checkpoints(app).set_marks([row_key(public), row_key(private)])
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PublishDialog)
        await pilot.press("y")  # the dialog's key for "publish"
        await settle(pilot)
        assert is_public(demo, public) and is_public(demo, private)
        assert checkpoints(app).marks == frozenset()


@pytest.mark.parametrize("key", ["enter", "escape", "n"])
async def test_delete_cancelled_keeps_the_checkpoint(demo: ServedDemo, key: str) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "sl/llama-8b-tulu3", "000500", "sampler")
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)
        assert app.focused is not None and app.focused.id == "delete-cancel"
        await pilot.press(key)
        await settle(pilot)
        assert demo.holds(row)
        assert row.tinker_path in {r.tinker_path for r in shown(app)}


async def test_delete_confirmed_with_y_is_gone_from_server_and_view(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "full/llama-3b-ft", "000150", "state")
        await pilot.press("d", "y")
        await settle(pilot)
        assert not demo.holds(row)
        catalog = screen_of(app).catalog
        assert catalog is not None and catalog.row(row_key(row)) is None  # not missing
        log = app.session_log.entries
        assert [entry.summary for entry in log] == ["Deleted 1 of 1"]


async def test_final_checkpoints_need_the_typed_word(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "full/llama-3b-ft", "final", "sampler")
        await pilot.press("d")
        await pilot.pause()  # the dialog waits for an answer: nothing to settle
        await pilot.press("tab", "y")  # y on the buttons is not enough
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)
        assert demo.holds(row)
        await pilot.press(*"delet", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog) and demo.holds(row)
        await pilot.press("e", "enter")  # "delete" is now typed
        await settle(pilot)
        assert not demo.holds(row)


async def test_more_than_ten_need_the_typed_word(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        catalog = screen_of(app).catalog
        assert catalog is not None
        run = next(r for r in catalog.runs if r.display_name == "sl/llama-8b-tulu3")
        victims = [r for r in run.stored_rows if not (r.final or r.resume_point or r.public)][:11]
        checkpoints(app).set_marks([row_key(r) for r in victims])
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DeleteDialog)
        await pilot.press(*"delete", "enter")
        await settle(pilot)
        assert not any(demo.holds(r) for r in victims)
        assert app.session_log.entries[-1].summary == "Deleted 11 of 11"


async def test_expire_instead_sets_a_one_day_ttl(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "sl/llama-8b-tulu3", "000600", "state")
        await pilot.press("d", "e")
        await settle(pilot)
        kept = demo.store.get_checkpoint(row.run_id, row.checkpoint_id)
        assert kept.expires_at is not None
        assert (kept.expires_at - demo.clock.now()).total_seconds() == 86400


async def test_readonly_refuses_every_change(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock, readonly=True)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "sl/llama-8b-tulu3", "000500", "sampler")
        before = demo.store.get_checkpoint(row.run_id, row.checkpoint_id)
        await pilot.press("p", "t", "d", "y")
        await settle(pilot)
        assert isinstance(app.screen, type(screen_of(app)))  # no dialog opened
        assert demo.store.get_checkpoint(row.run_id, row.checkpoint_id) == before
        messages = [n.message for n in app._notifications]
        assert sum("Read-only mode" in message for message in messages) == 3


async def test_bulk_delete_with_failures_then_retry(
    faulty_demo: tuple[ServedDemo, FaultyApp],
) -> None:
    demo, faulty = faulty_demo
    faulty.fail_names({"000200"}, status=403)  # 403 is not retried by the client
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        catalog = screen_of(app).catalog
        assert catalog is not None
        run = next(r for r in catalog.runs if r.display_name == "sl/llama-8b-tulu3")
        victims = [r for r in run.stored_rows if r.name in ("000100", "000200", "000300")]
        checkpoints(app).set_marks([row_key(r) for r in victims])
        await pilot.press("d", "y")
        await settle(pilot)
        assert app.session_log.entries[-1].summary == "Deleted 4 of 6; 2 failed"
        failed = {row_key(r) for r in victims if r.name == "000200"}
        assert checkpoints(app).marks == failed  # failed ones stay marked
        assert set(screen_of(app).changes.failures) == failed  # with their error shown inline
        assert [demo.holds(r) for r in victims] == [r.name == "000200" for r in victims]
        faulty.fail_names(set())
        await pilot.press("R")
        await settle(pilot)
        assert not any(demo.holds(r) for r in victims)
        assert app.session_log.entries[-1].summary == "Deleted 2 of 2"
        assert screen_of(app).changes.failures == {}


DAY = timedelta(days=1)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("1", lambda old, now: old + DAY),
        ("2", lambda old, now: old + 7 * DAY),
        ("3", lambda old, now: old + 30 * DAY),
        ("4", lambda old, now: now + timedelta(hours=1)),
        ("5", lambda old, now: None),
    ],
)
async def test_each_ttl_preset_sets_the_expected_expiry(
    demo: ServedDemo, key: str, expected: Callable[[datetime, datetime], datetime | None]
) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        row = find(app, "sl/llama-8b-tulu3", "000100", "state")  # expires within hours
        assert row.expires_at is not None
        await highlight(pilot, app, row)
        await pilot.press("t")
        await pilot.pause()
        await pilot.press(key, "enter")
        await settle(pilot)
        after = demo.store.get_checkpoint(row.run_id, row.checkpoint_id).expires_at
        wanted = expected(row.expires_at, demo.clock.now())
        if wanted is None:
            assert after is None
        else:
            assert after is not None and abs((after - wanted).total_seconds()) < 1


async def test_a_typed_ttl_applies_to_every_marked_checkpoint(demo: ServedDemo) -> None:
    """`t`, then 36h typed from the focus the dialog opens with: 36 hours, never preset 3."""
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        rows = [find(app, "rl/qwen3-8b-math", name, "state") for name in ("000050", "000100")]
        checkpoints(app).set_marks([row_key(row) for row in rows])
        await pilot.press("t")
        await pilot.pause()
        await pilot.press(*"36h", "enter")
        await settle(pilot)
        for row in rows:
            after = demo.store.get_checkpoint(row.run_id, row.checkpoint_id).expires_at
            assert after == demo.clock.now() + timedelta(hours=36)
        assert app.session_log.entries[-1].action == "ttl"


async def test_an_out_of_range_ttl_is_refused_in_the_dialog(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        row = await loaded_on(pilot, app, "rl/qwen3-8b-math", "000050", "state")
        before = demo.store.get_checkpoint(row.run_id, row.checkpoint_id)
        await pilot.press("t")
        await pilot.pause()
        await pilot.press(*"5m", "enter")
        await pilot.pause()
        assert isinstance(app.screen, TtlDialog)
        assert "1 hour" in screen_text(app)  # the reason names the bounds
        await pilot.press("escape")
        await settle(pilot)
        assert demo.store.get_checkpoint(row.run_id, row.checkpoint_id) == before


async def test_marking_keys_and_the_status_line(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2", "slash", *"llama-1b", "enter")
        await settle(pilot)
        stored_rows = [row for row in shown(app) if not row.is_missing]
        assert len(stored_rows) == 6 and len(shown(app)) == 8  # two missing rows shown too
        await pilot.press("ctrl+a")
        assert checkpoints(app).marks == {row_key(row) for row in stored_rows}
        total_bytes = sum(row.size.bytes or 0 for row in stored_rows)
        assert f"6 marked · {format_bytes(total_bytes)}" in screen_text(app)
        await pilot.press("u")
        assert checkpoints(app).marks == frozenset()
        await pilot.press("g", "space")
        assert len(checkpoints(app).marks) == 1
        assert "1 marked" in screen_text(app)


async def test_the_session_log_lists_each_action(demo: ServedDemo) -> None:
    app = make_app(demo.url, demo.paths.logs, demo.clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await loaded_on(pilot, app, "sl/llama-8b-tulu3", "000500", "sampler")
        await pilot.press("p", "y")
        await settle(pilot)
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, SessionLogDialog)
        assert "Published 1 of 1" in screen_text(app)
