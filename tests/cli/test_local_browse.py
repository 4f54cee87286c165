"""`--local` on a folder that holds no store: looking never writes into it; the first change
makes the metadata; an empty folder says where it looked; a missing one is refused (exit 2)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.cli import main as cli_main
from ckpt_tui.client import Endpoint
from ckpt_tui.store import Store
from ckpt_tui.timekeeping.clock import FixedClock
from ckpt_tui.tui.app import CkptApp
from tests.support import layouts as L
from tests.support.clock import T0
from tests.support.tui import app_on, connection, screen_text, settle, shown

LONG_AGO = T0 - timedelta(days=1)
"""Before the tests' fixed clock: the saves are complete."""


def tree(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def local_app(root: Path, clock: FixedClock) -> CkptApp:
    return app_on([connection(Endpoint.local(root))], None, clock)


@pytest.fixture(autouse=True)
def no_cookbook_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "no-runs"))


def test_ls_on_an_empty_folder_says_where_it_looked_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli_main(["ls", "--local", str(empty)]) == 0
    out = capsys.readouterr().out
    assert f"no checkpoints found under {empty} (looked for " in out
    assert "checkpoint-<step>" in out and ".pt" in out
    assert tree(empty) == []


@pytest.mark.parametrize("command", [[], ["ls"], ["prune", "--keep-last", "1"]])
def test_a_missing_folder_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    missing = tmp_path / "nonexistent"
    assert cli_main([*command, "--local", str(missing)]) == 2
    assert f"--local {missing}: does not exist" in capsys.readouterr().err
    assert not missing.exists()


async def test_the_app_on_an_empty_folder_says_so_and_writes_nothing(
    tmp_path: Path, clock: FixedClock
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    app = local_app(empty, clock)
    async with app.run_test(size=(240, 36)) as pilot:
        await settle(pilot)
        assert f"no checkpoints found under {empty}" in screen_text(app)
    assert tree(empty) == []


def test_ls_on_a_training_folder_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    box = tmp_path / "box"
    L.written_long_ago(L.hf_trainer_output(box / "out", steps=(100, 200)), LONG_AGO)
    before = tree(box)
    assert cli_main(["ls", "--local", str(box), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [run["checkpoint_count"] for run in document["runs"]] == [2]
    assert tree(box) == before


async def test_browsing_a_training_folder_writes_nothing_until_a_change(
    tmp_path: Path, clock: FixedClock
) -> None:
    box = tmp_path / "box"
    L.written_long_ago(L.hf_trainer_output(box / "out", steps=(100, 200)), LONG_AGO)
    before = tree(box)
    app = local_app(box, clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert len(shown(app)) == 2
        assert tree(box) == before  # looking wrote nothing
        await pilot.press("t", "4", "enter")  # expire the highlighted checkpoint in 1 hour
        await settle(pilot)
    assert (box / ".ckpt-tui" / "meta.sqlite3").is_file()
    with Store.open(box, clock) as store:
        expiries = [c.expires_at for c in store.list_run_checkpoints("out")]
    assert sum(expiry is not None for expiry in expiries) == 1  # the change was kept
