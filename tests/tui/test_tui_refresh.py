"""A refresh of more checkpoints than one page: the view stays whole and the cursor stays put."""

from __future__ import annotations

import weakref
from datetime import timedelta

import httpx

from ckpt_tui.catalog.snapshot import LogDirSettings, Snapshot
from ckpt_tui.client import Backend
from ckpt_tui.clock import FixedClock
from ckpt_tui.store import Store
from ckpt_tui.tui.app import CkptApp
from tests.support.tui import checkpoints, screen_of, settle, shown

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
    app = CkptApp(Backend.remote(server_url), LogDirSettings((), None), clock=clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        target = a_path_on_the_last_page(server_url)
        assert checkpoints(app).move_cursor_to_key(target)
        screen = screen_of(app)
        counts: list[int] = []
        original = screen.feed.apply_snapshot

        def counted(snapshot: Snapshot) -> None:
            counts.append(len(snapshot.catalog.rows))
            original(snapshot)

        screen.feed.apply_snapshot = counted  # type: ignore[method-assign]
        await pilot.press("r")
        await settle(pilot)
        assert counts == [COUNT]  # one whole snapshot, no first-page view in between
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
    app = CkptApp(Backend.remote(server_url), LogDirSettings((), None), clock=clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        first = weakref.ref(screen_of(app).snapshot)
        for _ in range(2):
            await pilot.press("r")
            await settle(pilot)
        assert first() is None
