"""Opening a store whose metadata is cached (issue 26): a checkpoint whose files are unchanged
is trusted by its fingerprint (names, sizes, mtimes and inodes: metadata only) and none of its
files is opened; a file changed or a folder replaced between opens is looked at again."""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.store import Store
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.live_run import LiveRun
from tests.support.open_audit import files_opened_under

pytestmark = pytest.mark.usefixtures("quiet_environment")
SAVES = ("000010", "000020")
SETTLE = timedelta(seconds=SETTLE_SECONDS)


@pytest.fixture
def root(tmp_path: Path, clock: FixedClock) -> Path:
    """A store with two settled saves a trainer wrote (not the store), indexed once."""
    root = tmp_path / "store"
    with Store.open(root, clock) as store:
        store.create_run("sim", "Qwen/Qwen3-8B", lora_rank=8)
    run = LiveRun(root, "sim", tmp_path / "logs")
    for name in SAVES:
        run.begin(name)
        run.finish(name)
    with files_opened_under(root / "runs") as opened, Store.open(root, clock):
        pass
    assert opened["adapter_model.safetensors"] == 2  # new files: their headers are checked
    clock.advance(SETTLE)
    return root


def reason(store: Store, name: str) -> str | None:
    facts = store.get_checkpoint("sim", f"weights/{name}").user_metadata or {}
    return facts.get("incomplete_reason")


def test_a_warm_open_opens_no_checkpoint_file(root: Path, clock: FixedClock) -> None:
    with files_opened_under(root / "runs") as opened, Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
    checkpoint_files = {name: n for name, n in opened.items() if name != "run.json"}
    assert checkpoint_files == {}


def test_a_file_rewritten_at_the_same_size_is_a_change(root: Path, clock: FixedClock) -> None:
    weights = root / "runs/sim/weights/000010/adapter_model.safetensors"
    stat = weights.stat()
    weights.write_bytes(weights.read_bytes())
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with Store.open(root, clock) as store:
        assert "files changed less than" in (reason(store, "000010") or "")
        assert reason(store, "000020") is None


def test_a_folder_replaced_with_copied_times_is_a_change(
    root: Path, tmp_path: Path, clock: FixedClock
) -> None:
    """A copy (`cp -a`) of the same names, sizes and mtimes put in the folder's place: only
    the inodes tell (the old folder is kept aside, so that no inode number is reused)."""
    folder = root / "runs/sim/weights/000020"
    copy = folder.with_name("000020.copy")
    shutil.copytree(folder, copy)  # copy2: file times copied
    shutil.copystat(folder, copy)
    folder.rename(tmp_path / "old")
    copy.rename(folder)
    with Store.open(root, clock) as store:
        assert "files changed less than" in (reason(store, "000020") or "")
        assert reason(store, "000010") is None


def test_a_fingerprint_from_before_inodes_is_read_as_first_sight(
    root: Path, clock: FixedClock
) -> None:
    """Rows fingerprinted by an older version: files last changed long ago stay complete on
    upgrade (judged by their mtimes, as on first sight), rather than counting as just changed."""
    long_ago = clock.now().timestamp() - 3600
    for path in (root / "runs/sim/weights").rglob("*"):
        os.utime(path, (long_ago, long_ago))
    with sqlite3.connect(Layout(root).meta_file) as db:
        db.execute("UPDATE checkpoints SET files_fp = '0123456789abcdef0123456789abcdef'")
    db.close()
    with Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
