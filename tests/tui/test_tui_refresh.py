"""A refresh of more checkpoints than one page: the view stays whole and the cursor stays put."""

from __future__ import annotations

import weakref
from datetime import timedelta

import httpx

from ckpt_tui.backends import Fleet
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import DEFAULT_POLL_SECONDS
from tests.support.tui import app_on, checkpoints, connection, screen_of, screen_text, settle, shown

COUNT = 1_200
"""More than the client's page of 1,000: the first page alone is not the whole view."""


def fill(store: Store, clock: FixedClock) -> None:
    store.create_run("run-many", "Qwen/Qwen3-8B", lora_rank=32)
    for step in range(COUNT):
        created = clock.now() - timedelta(minutes=COUNT - step)
        store.add_checkpoint("run-many", f"weights/{step:06d}", created=created)


def a_path_on_the_last_page(url: str) -> str:
    """A checkpoint the server lists after the first 1,000 (the page a partial view lacks)."""
    answer = httpx.get(f"{url}/api/v1/checkpoints", params={"limit": 1, "offset": COUNT - 1})
    answer.raise_for_status()
    return str(answer.json()["checkpoints"][0]["tinker_path"])


async def test_refresh_keeps_every_row_and_the_cursor_until_the_new_list_is_whole(
    store: Store, server_url: str, clock: FixedClock
) -> None:
    fill(store, clock)
    app = app_on([connection(server_url)], None, clock, poll_interval=DEFAULT_POLL_SECONDS)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        target = a_path_on_the_last_page(server_url)
        assert checkpoints(app).move_cursor_to_key(("demo", target))
        screen = screen_of(app)
        counts: list[int] = []
        original = screen.apply_fleet

        def counted(fleet: Fleet) -> None:
            counts.append(len(fleet.rows()))
            original(fleet)

        screen.apply_fleet = counted  # type: ignore[method-assign]
        await pilot.press("r")
        await settle(pilot)
        # Only whole views, no first page in between (the second: the same view, once the
        # header's latency is measured).
        assert counts and set(counts) == {COUNT}
        assert len(shown(app)) == COUNT
        cursor = checkpoints(app).cursor_value
        assert cursor is not None and cursor.tinker_path == target
        assert "Refreshing" not in str(screen.query_one("#status-line").render())


async def test_replaced_snapshots_are_freed_at_once(
    store: Store, server_url: str, clock: FixedClock
) -> None:
    """Snapshots are untracked by the garbage collector: nothing may keep a replaced one
    alive, e.g. in a reference cycle or a worker that had it as an argument while it ran."""
    store.create_run("run-a", "Qwen/Qwen3-8B", lora_rank=32)
    store.add_checkpoint("run-a", "weights/000001")
    app = app_on([connection(server_url)], None, clock, poll_interval=DEFAULT_POLL_SECONDS)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        snapshot = screen_of(app).fleet.states[0].snapshot
        assert snapshot is not None
        first = weakref.ref(snapshot)
        del snapshot
        for _ in range(2):
            await pilot.press("r")
            await settle(pilot)
        assert first() is None


async def test_a_long_name_far_down_the_view_is_shown_whole(
    store: Store, server_url: str, clock: FixedClock
) -> None:
    """Column widths come from every row of the view, not its first 500."""
    long_name = "a-rather-long-name-00600"
    store.create_run("run-many", "Qwen/Qwen3-8B", lora_rank=32)
    for step in range(600):
        created = clock.now() - timedelta(minutes=600 - step)
        store.add_checkpoint("run-many", f"weights/{step:06d}", created=created)
    store.add_checkpoint("run-many", f"weights/{long_name}", created=clock.now())
    app = app_on([connection(server_url)], None, clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2", "G")  # oldest first: the newest, long name is last
        await settle(pilot)
        cursor = checkpoints(app).cursor_value
        assert cursor is not None and cursor.name == long_name
        lines = screen_text(app).splitlines()  # the table's row, not the details' path
        assert any(line.strip().startswith(long_name) for line in lines)
