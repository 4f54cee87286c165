"""Opening a store whose metadata is cached (issue 26): a checkpoint whose files are unchanged
is trusted by its fingerprint (names, sizes, mtimes and inodes: metadata only) and none of its
files is opened; a file changed or a folder replaced between opens is looked at again.

The names a look listed are kept with each folder's ctime, and the next look stats them
without listing the folder (`settle.files_unchanged`). These tests keep every listing of a
folder older than the look (`LISTING_AGE_NS` = 0, after waiting for the file system's clock
to move on), so the looks between their opens go through those kept listings."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import msgspec
import pytest

from ckpt_tui.api_types import Checkpoint
from ckpt_tui.store import Store, settle
from ckpt_tui.store.layout import Layout
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.clock import T0
from tests.support.fs_clock import wait_past_changes_under
from tests.support.live_run import LiveRun
from tests.support.open_audit import files_opened_under, folders_listed_under

pytestmark = pytest.mark.usefixtures("quiet_environment")
SAVES = ("000010", "000020")
SETTLE = timedelta(seconds=SETTLE_SECONDS)


@pytest.fixture(autouse=True)
def listings_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every listing of folders changed before the look is kept (see the module's docstring)."""
    monkeypatch.setattr(settle, "LISTING_AGE_NS", 0)


@pytest.fixture
def root(tmp_path: Path, clock: FixedClock) -> Path:
    """A store with two settled saves a trainer wrote (not the store), indexed once, then
    looked at again once its folders are older than a look (their listings kept)."""
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
    keep_listings(root, tmp_path)
    return root


def keep_listings(root: Path, tmp_path: Path) -> None:
    """Wait for the file system's clock, then open: every checkpoint's listing is kept."""
    wait_past_changes_under(root / "runs", tmp_path / "fs-clock")
    Store.open(root, FixedClock(T0)).close()
    assert None not in listings(root).values()


def listings(root: Path) -> dict[str, bytes | None]:
    with sqlite3.connect(Layout(root).meta_file) as db:
        found = dict(db.execute("SELECT checkpoint_id, files_listing FROM checkpoints"))
    db.close()
    return found


def checkpoint_folders_listed(listed: Counter[str]) -> list[str]:
    return sorted(path for path in listed if path.count(os.sep) >= 3)  # runs/RUN/SEGMENT/NAME


def reason(store: Store, name: str) -> str | None:
    facts = store.get_checkpoint("sim", f"weights/{name}").user_metadata or {}
    return facts.get("incomplete_reason")


def test_a_warm_open_opens_no_checkpoint_file(root: Path, clock: FixedClock) -> None:
    with files_opened_under(root / "runs") as opened, Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
    checkpoint_files = {name: n for name, n in opened.items() if name != "run.json"}
    assert checkpoint_files == {}


def test_a_warm_open_lists_no_checkpoint_folder(root: Path, clock: FixedClock) -> None:
    """Each checkpoint's kept listing is looked at instead: one stat per name."""
    with folders_listed_under(root) as listed, Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
        sizes = [c.size_bytes for c in listing_of(store)]
    assert checkpoint_folders_listed(listed) == []
    assert listed["runs/sim/weights"] == 1  # which checkpoints there are
    assert sizes == [LiveRun(root, "sim", root / "logs").size_on_disk(name) for name in SAVES]


def test_a_warm_open_leaves_no_folder_open(root: Path, clock: FixedClock) -> None:
    """The segment folders held open to stat names from are closed once the run is read
    (guard)."""
    runs = os.fspath(root.resolve() / "runs")
    with Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
        held = held_paths()
    assert [path for path in held if path.startswith(runs)] == []


def held_paths() -> list[str]:
    """What this process's descriptors are open on."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:
            continue  # the one that listed the folder, closed since
    return found


def add_file(folder: Path) -> None:
    (folder / "optimizer.pt").write_bytes(b"\0" * 10)


def add_file_in_a_subfolder(folder: Path) -> None:
    (folder / "extra").mkdir()
    (folder / "extra/optimizer.pt").write_bytes(b"\0" * 10)


def add_file_setting_the_times_back(folder: Path) -> None:
    """Only the folder's ctime shows it: `utime` cannot set that back."""
    before = folder.lstat()
    add_file(folder)
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))


def remove_file(folder: Path) -> None:
    (folder / "adapter_config.json").unlink()


def rename_file(folder: Path) -> None:
    (folder / "adapter_config.json").rename(folder / "adapter_config.old.json")


@pytest.mark.parametrize(
    "change",
    [add_file, add_file_setting_the_times_back, add_file_in_a_subfolder, remove_file, rename_file],
)
def test_a_name_added_removed_or_renamed_in_a_checkpoint_is_a_change(
    root: Path, clock: FixedClock, change: Callable[[Path], None]
) -> None:
    """Only the folder's times say a name came or went: its ctime is checked at each look."""
    folder = root / "runs/sim/weights/000010"
    change(folder)
    with Store.open(root, clock) as store:
        assert "files changed less than" in (reason(store, "000010") or "")
        assert reason(store, "000020") is None
        size = store.get_checkpoint("sim", "weights/000010").size_bytes
    assert size == sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_a_file_added_to_a_subfolder_already_there_is_a_change(
    root: Path, tmp_path: Path, clock: FixedClock
) -> None:
    """A subfolder's listing is trusted by its own ctime, kept with its name."""
    folder = root / "runs/sim/weights/000010"
    add_file_in_a_subfolder(folder)
    keep_listings(root, tmp_path)
    before = (folder / "extra").lstat()
    (folder / "extra/scheduler.pt").write_bytes(b"\0" * 3)
    os.utime(folder / "extra", ns=(before.st_atime_ns, before.st_mtime_ns))  # ctime stays new
    with Store.open(root, clock) as store:
        assert "files changed less than" in (reason(store, "000010") or "")
        size = store.get_checkpoint("sim", "weights/000010").size_bytes
    assert size == sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_names_that_are_not_utf8_are_looked_at_without_listing(
    root: Path, tmp_path: Path, clock: FixedClock
) -> None:
    folder = root / "runs/sim/weights/000010"
    odd = os.path.join(os.fsencode(folder), b"\xff.bin")
    with open(odd, "wb") as file:
        file.write(b"\0" * 7)
    keep_listings(root, tmp_path)
    with folders_listed_under(root) as listed, Store.open(root, clock) as store:
        assert reason(store, "000010") is None
        size = store.get_checkpoint("sim", "weights/000010").size_bytes
    assert checkpoint_folders_listed(listed) == []
    with open(odd, "r+b") as file:  # rewritten in place, at the same size
        file.write(b"\1" * 7)
    with Store.open(root, clock) as store:
        assert "files changed less than" in (reason(store, "000010") or "")
        assert store.get_checkpoint("sim", "weights/000010").size_bytes == size


def test_a_folder_changed_just_before_a_look_keeps_no_listing(
    root: Path, tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second change in the same timestamp tick would leave the folder's ctime as it is: a
    listing is kept only of folders last changed `LISTING_AGE_NS` before the look."""
    monkeypatch.setattr(settle, "LISTING_AGE_NS", 3600 * 10**9)
    add_file(root / "runs/sim/weights/000010")
    Store.open(root, clock).close()
    assert listings(root)["weights/000010"] is None
    assert listings(root)["weights/000020"] is not None
    with folders_listed_under(root) as listed, Store.open(root, clock):
        pass
    assert checkpoint_folders_listed(listed) == ["runs/sim/weights/000010"]


def set_listings(root: Path, listing_of_folder: Callable[[Path, bytes], bytes]) -> None:
    """Replace each save's kept listing with `listing_of_folder(folder, kept)`."""
    kept = listings(root)
    with sqlite3.connect(Layout(root).meta_file) as db:
        for name in SAVES:
            folder, checkpoint_id = root / "runs/sim/weights" / name, f"weights/{name}"
            listing = listing_of_folder(folder, kept[checkpoint_id] or b"")
            db.execute(
                "UPDATE checkpoints SET files_listing = ? WHERE checkpoint_id = ?",
                (listing, checkpoint_id),
            )
    db.close()


def text_listing(folder: Path, kept: bytes) -> bytes:
    """A listing as versions before 2 kept it: the folder's ctime, then `f` and each name."""
    names = sorted(path.name for path in folder.iterdir() if path.is_file())
    assert len(names) == len(list(folder.iterdir()))  # no subfolder to write in the old form
    return "\0".join([str(folder.lstat().st_ctime_ns), *("f" + name for name in names)]).encode()


def test_a_listing_kept_by_an_older_version_is_walked_once_then_kept_anew(
    root: Path, clock: FixedClock
) -> None:
    """An older version kept the names as text and made the fingerprint again from their
    stats; this one compares kept stats. An old listing is not trusted: the first open walks
    the folder (the files are the same: the checkpoint stays complete) and keeps a new one."""
    set_listings(root, text_listing)
    with folders_listed_under(root) as listed, Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
    assert checkpoint_folders_listed(listed) == [f"runs/sim/weights/{name}" for name in SAVES]
    assert all(listing and listing[0] >= 0x80 for listing in listings(root).values())  # msgpack
    with folders_listed_under(root) as listed, Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
    assert checkpoint_folders_listed(listed) == []


def with_a_name_holding_nul(folder: Path, kept: bytes) -> bytes:
    *start, files = msgspec.msgpack.decode(kept)
    return msgspec.msgpack.encode([*start, [*files, [b"a\0b", files[0][1]]]])


def damaged_text(folder: Path, kept: bytes) -> bytes:
    return b"\xff\x00 not a listing"


def another_version(folder: Path, kept: bytes) -> bytes:
    return msgspec.msgpack.encode([3, *msgspec.msgpack.decode(kept)[1:]])


def of_another_look(folder: Path, kept: bytes) -> bytes:
    """A listing made with another fingerprint than the row's."""
    version, fingerprint, *rest = msgspec.msgpack.decode(kept)
    return msgspec.msgpack.encode([version, fingerprint + "0", *rest])


@pytest.mark.parametrize(
    "damage", [with_a_name_holding_nul, damaged_text, another_version, of_another_look]
)
def test_a_damaged_listing_is_walked_instead(
    root: Path, clock: FixedClock, damage: Callable[[Path, bytes], bytes]
) -> None:
    """A listing that cannot be used (a name no path can hold, bytes that are no listing, a
    version this one does not know, one made with another fingerprint than the row's) is no
    error: the folder is walked (guards)."""
    set_listings(root, damage)
    with folders_listed_under(root) as listed, Store.open(root, clock) as store:
        assert [reason(store, name) for name in SAVES] == [None, None]
    assert checkpoint_folders_listed(listed) == [f"runs/sim/weights/{name}" for name in SAVES]


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
