"""The TUI on a store that could not read one of its folders (issue 23, item 1): the problem
is named, the checkpoint stays listed with its metadata, and no keep policy plans on it.

The folder is a mount point (another file system, which the store does not walk into): a
failed read that root meets too, so the app can run in-process."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.client import Endpoint
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.screens.keep_policy_dialog import KeepPolicyDialog
from tests.support.clock import T0
from tests.support.layouts import written_long_ago
from tests.support.small_disk import small_tmpfs
from tests.support.tui import app_on, connection, screen_line, screen_text, settle, shown

FIXTURE = Path(__file__).parents[1] / "fixtures" / "trainer_box"
TEN = "weights/checkpoint-10"


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "no-runs"))
    box = Path(shutil.copytree(FIXTURE, tmp_path / "box"))
    return written_long_ago(box, T0 - timedelta(days=1))


async def test_a_folder_not_read_is_named_and_no_keep_policy_plans(
    box: Path, clock: FixedClock
) -> None:
    with Store.open(box) as store:
        store.set_public("trainer-out", TEN, True)
    with small_tmpfs(box / "trainer-out" / "checkpoint-10"):
        app = app_on([connection(Endpoint.local(box))], None, clock)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", "slash", *"checkpoint-10", "enter")
            await settle(pilot)
            [ten] = shown(app)
            assert ten.public  # still listed, with its metadata
            await pilot.press("escape")
            messages = "\n".join(str(n.message) for n in app._notifications)
            assert "trainer-out/checkpoint-10: on another file system" in messages
            await pilot.press("K")
            await settle(pilot)
            assert not isinstance(app.screen, KeepPolicyDialog)
            messages = "\n".join(str(n.message) for n in app._notifications)
            assert "No keep policy on a partial list" in messages
    with Store.open(box) as store:
        assert store.get_checkpoint("trainer-out", TEN).public


async def test_a_partial_list_shows_as_partial_after_its_notice_is_gone(
    box: Path, clock: FixedClock
) -> None:
    """The folder not read was named only in a notice: once it went, the header and the
    status line read as if the list were whole. They say it is partial, and `?` says why."""
    problem = "trainer-out/checkpoint-10: on another file system (a mount point), not read"
    with small_tmpfs(box / "trainer-out" / "checkpoint-10"):
        app = app_on([connection(Endpoint.local(box))], None, clock)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            app.clear_notifications()  # as the notice's time runs out
            await pilot.pause()
            assert "! partial" in screen_line(app, "3 runs")  # the header
            status = screen_line(app, "Incomplete list")
            assert f"Incomplete list (? shows why): {problem}" in status
            await pilot.press("question_mark")
            await pilot.pause()
            help_screen = screen_text(app)
    assert "Incomplete list: what could not be read" in help_screen
    assert len([line for line in help_screen.splitlines() if problem in line]) == 2
