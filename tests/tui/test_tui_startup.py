"""The app on local stores opened the command line's way: each store opens on its first
request, after the app's first frame (`OpenedOnFirstRequest`); what it shows is the same."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.cli.common import connection_to
from ckpt_tui.client import Endpoint
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.clock import T0
from tests.support.tui import app_on, backend_error, screen_text, settle, shown


@pytest.fixture(autouse=True)
def no_cookbook_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "no-runs"))


def tree(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


async def test_stores_opened_on_their_first_request_are_listed(
    tmp_path: Path, clock: FixedClock
) -> None:
    box = tmp_path / "box"
    L.written_long_ago(L.hf_trainer_output(box / "out", steps=(100, 200)), T0 - timedelta(1))
    empty = tmp_path / "empty"
    empty.mkdir()
    before = tree(box)
    connections = [
        connection_to(Endpoint.local(box), "box", open_later=True),
        connection_to(Endpoint.local(empty), "empty", open_later=True),
    ]
    app = app_on(connections, None, clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")  # every checkpoint
        await settle(pilot)
        assert sorted(row.name for row in shown(app)) == ["checkpoint-100", "checkpoint-200"]
        assert backend_error(app, "box") is None and backend_error(app, "empty") is None
    assert tree(box) == before and tree(empty) == []  # looking wrote nothing


async def test_a_store_that_does_not_open_shows_why(tmp_path: Path, clock: FixedClock) -> None:
    broken = tmp_path / "broken"
    L.write(broken / ".ckpt-tui" / "meta.sqlite3", b"not a database" * 100)
    app = app_on([connection_to(Endpoint.local(broken), "broken", open_later=True)], None, clock)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        error = backend_error(app) or ""
        assert f"could not open local store {broken}" in error
        assert "cannot be used (file is not a database); move it away" in error
        assert "Backend error (r retries): could not open local store" in screen_text(app)
