"""A full disk through the real app: a delete and a publish that the server refuses with 507
are shown as failures that say why, and the store keeps the checkpoint as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ckpt_tui.backends.fleet_view import row_key
from ckpt_tui.server import create_app
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.seed import seed_store
from tests.support.small_disk import fill, small_tmpfs
from tests.support.tui import app_on, connection, loaded_on, screen_of, screen_text, settle

URL = "http://full-disk.ckpt-tui.test"


@pytest.fixture
def full_store(tmp_path: Path, clock: FixedClock) -> Iterator[Store]:
    """A store of one run of three checkpoints on a 2 MiB tmpfs with no byte left."""
    with small_tmpfs(tmp_path / "disk") as disk:
        store = Store.open(disk / "store", clock)
        seed_store(store, runs=1, per_run=3)
        filler = fill(disk)
        yield store
        filler.unlink()
        store.close()


def listed(store: Store) -> list[tuple[str, bool]]:
    return [(c.checkpoint_id, c.public) for c in store.list_run_checkpoints("run-000")]


async def test_a_delete_and_a_publish_on_a_full_disk_fail_and_say_why(
    full_store: Store, clock: FixedClock
) -> None:
    before = listed(full_store)
    transport = httpx.ASGITransport(app=create_app(full_store, sweep_interval=None))
    app = app_on([connection(URL, "box", transport=transport)], None, clock)
    async with app.run_test(size=(160, 40)) as pilot:
        row = await loaded_on(pilot, app, "run-000", "0001", "state")
        await pilot.press("d", "y")
        await settle(pilot)
        assert app.session_log.entries[-1].summary == "Deleted 0 of 1; 1 failed"
        error = screen_of(app).changes.failures[row_key(row)]
        assert error.startswith("507") and "the disk holding the store is full" in error
        assert "nothing was changed" in error and "free some space" in error
        await pilot.press("p", "y")
        await settle(pilot)
        assert "1 failed" in app.session_log.entries[-1].summary
        error = screen_of(app).changes.failures[row_key(row)]
        assert error.startswith("507 publishing") and "is full" in error
        assert "✗ 507 publishing" in screen_text(app)  # on the checkpoint's row
    assert listed(full_store) == before
    assert (full_store.root / "runs/run-000/weights/0001/adapter.bin").is_file()
