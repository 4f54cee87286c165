"""The TUI on a store that could not read one of its folders (issue 23, item 1): the problem
is named, the checkpoint stays listed with its metadata, and no keep policy plans on it.

The folder is a mount point (another file system, which the store does not walk into): a
failed read that root meets too, so the app can run in-process."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.client import Backend
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.screens.keep_policy import KeepPolicyScreen
from tests.support.clock import T0
from tests.support.layouts import written_long_ago
from tests.support.small_disk import small_tmpfs
from tests.support.tui import app_on, connection, settle, shown

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
        app = app_on([connection(Backend.local(box))], None, clock)
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
            assert not isinstance(app.screen, KeepPolicyScreen)
            messages = "\n".join(str(n.message) for n in app._notifications)
            assert "No keep policy on a partial list" in messages
    with Store.open(box) as store:
        assert store.get_checkpoint("trainer-out", TEN).public
