"""Opening a store whose metadata is cached (issue 26): a checkpoint whose files are unchanged
is trusted by its fingerprint (names, sizes, mtimes and inodes: metadata only) and none of its
files is opened; a file changed or a folder replaced between opens is looked at again."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.api_types import Checkpoint
from ckpt_tui.store import Store
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.clock import T0
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


def test_a_warm_open_opens_no_file_at_all(root: Path, clock: FixedClock) -> None:
    """run.json too: what it said is kept with its size, times and inode."""
    with files_opened_under(root) as opened, Store.open(root, clock) as store:
        assert store.get_run("sim").base_model == "Qwen/Qwen3-8B"
    assert opened == {}


def test_a_run_json_rewritten_is_read_again(root: Path, clock: FixedClock) -> None:
    run_json = root / "runs/sim/run.json"
    run_json.write_text(run_json.read_text().replace("Qwen/Qwen3-8B", "Qwen/Qwen3-32B"))
    with files_opened_under(root) as opened, Store.open(root, clock) as store:
        assert store.get_run("sim").base_model == "Qwen/Qwen3-32B"
    assert opened == {"run.json": 1}


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


# --- checkpoints outside runs/ (discovered) ----------------------------------------------------
def discovered_store(root: Path) -> Path:
    """A Trainer output, a torch.save file, a Lightning file, a DeepSpeed run, a DCP folder
    and a PEFT adapter, written long before the store looks."""
    L.hf_trainer_output(root / "trainer", steps=(100, 200), best=100)
    L.full_torch_checkpoint(root / "loose/model.pt")
    L.lightning_ckpt(root / "loose/last.ckpt")
    L.deepspeed_run(root / "ds", steps=(100, 200), latest=200)
    L.dcp_checkpoint(root / "dcp/step-5")
    L.peft_adapter(root / "peft/adapter")
    return L.written_long_ago(root, T0 - timedelta(days=1))


def listing(store: Store) -> list[tuple[str, int | None, dict[str, str]]]:
    return sorted((c.tinker_path, c.size_bytes, c.user_metadata or {}) for c in listing_of(store))


def test_a_warm_open_reads_no_file_of_checkpoints_outside_runs(
    tmp_path: Path, clock: FixedClock
) -> None:
    """Discovery read every header at each open (trainer_state.json, pickles, .metadata,
    DeepSpeed's `latest`): what it found is kept with the files' fingerprint."""
    root = discovered_store(tmp_path / "store")
    with files_opened_under(root) as first, Store.open(root, clock) as store:
        cold = listing(store)
    assert {"trainer_state.json", "model.pt", "last.ckpt", "latest", ".metadata"} <= set(first)
    with files_opened_under(root) as opened, Store.open(root, clock) as store:
        warm = listing(store)
    assert opened == {}
    assert warm == cold and len(warm) >= 8


def test_a_discovered_checkpoint_whose_files_changed_is_read_again(
    tmp_path: Path, clock: FixedClock
) -> None:
    root = discovered_store(tmp_path / "store")
    Store.open(root, clock).close()
    state = root / "trainer/checkpoint-200/trainer_state.json"
    L.write_json(state, {**json.loads(state.read_text()), "global_step": 210})  # same name
    L.full_torch_checkpoint(root / "loose/model.pt", step=900)
    for changed in (state, root / "loose/model.pt"):
        stamp = (T0 - timedelta(hours=1)).timestamp()
        os.utime(changed, (stamp, stamp))
    with files_opened_under(root) as opened, Store.open(root, clock) as store:
        steps = {c.tinker_path: (c.user_metadata or {}).get("step") for c in listing_of(store)}
    assert {"trainer_state.json", "model.pt"} <= set(opened)  # the two changed checkpoints'
    assert not {".metadata", "latest", "last.ckpt", "adapter_config.json"} & set(opened)
    assert steps["tinker://loose/weights/model.pt"] == "900"


def listing_of(store: Store) -> list[Checkpoint]:
    return store.list_checkpoints(0, 1000)[0]
