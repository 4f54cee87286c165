"""A checkpoint deleted through the app stays deleted, not "missing", after a restart: the
actions log says it went on purpose. The app is opened as `ckpt-tui --url URL --log-dir LOGS`
opens it (its settings from the command line's), a tracked checkpoint is deleted with `d` `y`,
the app quits; then `ckpt-tui ls --json` and a new app both leave it out, while the training
log still names it and the server no longer has it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ckpt_tui.backends.fleet_view import row_key
from ckpt_tui.catalog import CheckpointRow
from ckpt_tui.catalog.actions_log import state_log_file
from ckpt_tui.catalog.snapshot import LogDirSettings
from ckpt_tui.cli import main
from ckpt_tui.tui.app import CkptApp
from tests.support.demo_fixture import ServedDemo
from tests.support.tui import connection, find, highlight, screen_of, settle, shown

pytestmark = pytest.mark.usefixtures("quiet_environment")

RUN, NAME = "full/llama-3b-ft", "000150"


def opened_as_the_command_line_does(demo: ServedDemo) -> CkptApp:
    """`ckpt-tui --url URL --log-dir LOGS`: the settings the command line makes."""
    settings = LogDirSettings.from_args([demo.paths.logs])
    assert settings.actions_log == state_log_file()  # the file the app writes its log to
    return CkptApp([connection(demo.url)], settings, clock=demo.clock, poll_interval=0)


async def delete_one(demo: ServedDemo) -> tuple[CheckpointRow, int]:
    """Delete one tracked checkpoint with `d` `y`; it, and the missing rows before."""
    app = opened_as_the_command_line_does(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        row = find(app, RUN, NAME, "state")
        assert row.ref is not None and not row.is_missing  # a training log names it
        await highlight(pilot, app, row)
        missing_before = sum(1 for shown_row in shown(app) if shown_row.is_missing)
        await pilot.press("d", "y")
        await settle(pilot)
    assert not demo.holds(row)
    return row, missing_before


async def after_a_restart(demo: ServedDemo, row: CheckpointRow) -> tuple[bool, int]:
    """A new app: whether it lists `row` at all, and its missing rows (all checkpoints)."""
    app = opened_as_the_command_line_does(demo)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        catalog = screen_of(app).catalog
        assert catalog is not None
        listed = catalog.row(row_key(row)) is not None
        return listed, sum(1 for shown_row in shown(app) if shown_row.is_missing)


def test_a_checkpoint_deleted_in_the_app_is_not_missing_after_a_restart(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    row, missing_before = asyncio.run(delete_one(demo))
    assert row.tinker_path in state_log_file().read_text()

    assert main(["ls", "--url", demo.url, "--log-dir", str(demo.paths.logs), "--json"]) == 0
    document: Any = json.loads(capsys.readouterr().out)
    paths = [c["tinker_path"] for run in document["runs"] for c in run["checkpoints"]]
    assert row.tinker_path not in paths
    assert document["totals"]["missing"] == missing_before

    listed, missing_after = asyncio.run(after_a_restart(demo, row))
    assert not listed
    assert missing_after == missing_before


def test_checkpoints_pruned_with_yes_are_not_missing_afterwards(
    demo: ServedDemo, capsys: pytest.CaptureFixture[str]
) -> None:
    where = ["--url", demo.url, "--log-dir", str(demo.paths.logs)]

    def listing() -> Any:
        assert main(["ls", *where, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    missing_before = listing()["totals"]["missing"]
    prune = ["prune", *where, "--run", RUN, "--keep-last", "1", "--yes", "--json"]
    assert main(prune) == 0
    outcomes = json.loads(capsys.readouterr().out)["outcomes"]
    deleted = {outcome["tinker_path"] for outcome in outcomes if outcome["ok"]}
    assert deleted and all(path in state_log_file().read_text() for path in deleted)

    after = listing()
    listed = {c["tinker_path"] for run in after["runs"] for c in run["checkpoints"]}
    assert not deleted & listed  # the training log names them; the server has them no more
    assert after["totals"]["missing"] == missing_before
