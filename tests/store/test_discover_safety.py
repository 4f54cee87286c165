"""Hostile files and safe changes for discovered checkpoints: code-running pickles are never
run, odd files never block or crash, deletes remove exactly one folder or file (crash-safe),
TTLs never remove incomplete checkpoints, base models of adapters stay, read-only refuses."""

from __future__ import annotations

import os
import struct
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.store import ConflictError, InvalidRequestError, ReadOnlyStoreError, Store
from ckpt_tui.store.discover import loose
from ckpt_tui.store.discover.pickle_scan import scan_pickle
from ckpt_tui.store.trash import DELETE_STEPS
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L


class Crash(Exception):
    pass


def meta(store: Store, run_id: str) -> dict[str, dict[str, str]]:
    return {c.checkpoint_id: c.user_metadata or {} for c in store.list_run_checkpoints(run_id)}


def test_code_running_pickle_is_never_run(tmp_path: Path, clock: FixedClock) -> None:
    marker = tmp_path / "PWNED"
    root = tmp_path / "store"
    L.write(root / "exp/evil.pt", L.code_running_pickle(marker))
    L.write(root / "exp/.metadata-less/x.distcp", b"")  # hidden: skipped
    with Store.open(root, clock) as store:
        facts = meta(store, "exp")["sampler_weights/evil.pt"]
        store.list_checkpoints()
    assert not marker.exists()
    assert facts["pickle_globals"] == "os.system" and facts["params"] == "16"


def test_the_hostile_fixture_does_run_code_when_loaded(tmp_path: Path) -> None:
    """The fixture is real: the same opcodes, fed to pickle by a child process, run `touch`."""
    marker = tmp_path / "ran"
    command = f"touch {marker}"
    opcodes = b"\x80\x02cos\nsystem\n(X" + struct.pack("<I", len(command)) + command.encode()
    payload = opcodes + b"tR."
    assert scan_pickle(payload).unsafe_globals == ["os.system"]
    assert not marker.exists()
    import subprocess
    import sys

    code = "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"
    subprocess.run([sys.executable, "-c", code], input=payload, check=True)
    assert marker.exists()


def test_odd_files_are_flagged_or_skipped(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    good = L.torch_zip(L.model_state(2))
    L.write(root / "exp/half.pt", good[: len(good) // 2])
    L.write(root / "exp/other.pt", L.zip_entries(b"", {}, "x").replace(b"data.pkl", b"info.txt"))
    L.write(root / "exp/garbage.pth", b"hello world")
    L.write(root / "exp/train.bin", bytes(100))  # a token file, not a checkpoint
    L.write(root / "exp/next.pt.tmp", good[:10])
    os.mkfifo(root / "exp/fifo.pt")  # would block a plain open(); must be skipped
    (root / "exp/dangling.pt").symlink_to(root / "nowhere.pt")
    L.safetensors_file(root / "short/model.safetensors", L.MODEL_ST)
    data = (root / "short/model.safetensors").read_bytes()
    (root / "short/model.safetensors").write_bytes(data[:-8])
    (root / "dirs/m1").mkdir(parents=True)
    L.write_json(root / "dirs/m1/config.json", {})
    (root / "dirs/m1/model.safetensors").mkdir()  # a folder named as a file: OSError on open
    L.write(root / "dirs/m1/x.safetensors", data)
    with Store.open(root, clock) as store:
        exp, short = meta(store, "exp"), meta(store, "short")
        odd = meta(store, "dirs")["sampler_weights/m1"]
    assert sorted(exp) == [  # single files with no optimizer state to be seen: weights alone
        "sampler_weights/garbage.pth", "sampler_weights/half.pt",
        "sampler_weights/next.pt.tmp", "sampler_weights/other.pt",
    ]  # fmt: skip
    assert "truncated" in exp["sampler_weights/half.pt"]["incomplete_reason"]
    assert "not a torch checkpoint" in exp["sampler_weights/other.pt"]["unreadable"]
    assert "neither a zip nor a pickle" in exp["sampler_weights/garbage.pth"]["unreadable"]
    assert exp["sampler_weights/next.pt.tmp"]["incomplete"] == "true"
    assert "truncated" in short["sampler_weights/model.safetensors"]["incomplete_reason"]
    assert odd["params"] == "36"  # the folder named model.safetensors is not read as one
    fifo = loose.examine(str(root / "exp/fifo.pt"), "fifo.pt")  # an OSError on open
    assert fifo is not None and "not a regular file" in fifo.facts["unreadable"]


def test_truncated_and_damaged_pickles() -> None:
    writer = L.PickleWriter()
    writer.value({"a": [1, 2, 3], "optimizer": {}})
    full = writer.finish()
    assert scan_pickle(full).top == {"a": [1, 2, 3], "optimizer": {}}
    cut = scan_pickle(full[:-2])
    assert not cut.readable and "optimizer" in cut.strings
    assert not scan_pickle(b"\x80\x02\xff").readable


def test_delete_folder_and_file_exactly(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    L.hf_trainer_output(root / "out")
    L.full_torch_checkpoint(root / "exp/a.pt")
    L.full_torch_checkpoint(root / "exp/b.pt")
    with Store.open(root, clock) as store:
        store.delete_checkpoint("out", "weights/checkpoint-100")
        store.delete_checkpoint("exp", "weights/a.pt")
        left = [c.checkpoint_id for c in store.list_run_checkpoints("out")]
    assert not (root / "out/checkpoint-100").exists() and (root / "out/checkpoint-200").is_dir()
    assert not (root / "exp/a.pt").exists() and (root / "exp/b.pt").is_file()
    assert left == ["weights/checkpoint-200"]
    assert list((root / ".ckpt-tui/trash").iterdir()) == []


@pytest.mark.parametrize("step", DELETE_STEPS)
def test_interrupted_delete_of_a_file_completes(
    tmp_path: Path, clock: FixedClock, step: str
) -> None:
    root = tmp_path / "store"
    L.full_torch_checkpoint(root / "exp/a.pt")
    L.full_torch_checkpoint(root / "exp/b.pt")
    store = Store.open(root, clock)

    def crash_after(name: str) -> None:
        if name == step:
            raise Crash(name)

    store.delete_step_hook = crash_after
    with pytest.raises(Crash):
        store.delete_checkpoint("exp", "weights/a.pt")
    store.close()
    with Store.open(root, clock) as reopened:
        ids = [c.checkpoint_id for c in reopened.list_run_checkpoints("exp")]
    assert ids == ["weights/b.pt"] and (root / "exp/b.pt").is_file()
    assert not (root / "exp/a.pt").exists()


def test_ttl_never_removes_incomplete(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    L.hf_trainer_output(root / "out", steps=(100, 200, 300))
    (root / "out/checkpoint-300/trainer_state.json").unlink()
    with Store.open(root, clock, settle_seconds=0) as store:
        with pytest.raises(ConflictError, match="incomplete"):
            store.set_ttl("out", "weights/checkpoint-300", 3600)
        store.set_ttl("out", "weights/checkpoint-100", 3600)
        store.set_ttl("out", "weights/checkpoint-200", 3600)
        (root / "out/checkpoint-200/trainer_state.json").unlink()  # incomplete again
        store.rescan()
        clock.advance(timedelta(hours=2))
        removed = store.sweep_expired()
        ids = [c.checkpoint_id for c in store.list_run_checkpoints("out")]
        store.delete_checkpoint("out", "weights/checkpoint-300")  # explicit delete: allowed
    assert removed == ["tinker://out/weights/checkpoint-100"]
    assert ids == ["weights/checkpoint-200", "weights/checkpoint-300"]
    assert (root / "out/checkpoint-200").is_dir() and not (root / "out/checkpoint-300").exists()


def test_base_model_of_an_adapter_is_kept(tmp_path: Path, clock: FixedClock) -> None:
    root = tmp_path / "store"
    base = L.sharded_pretrained(root / "models/base")
    L.peft_adapter(root / "adapters/lora", base=str(base))
    with Store.open(root, clock) as store:
        with pytest.raises(ConflictError, match="base model of tinker://adapters"):
            store.delete_checkpoint("models", "sampler_weights/base")
        store.delete_checkpoint("adapters", "sampler_weights/lora")
        store.delete_checkpoint("models", "sampler_weights/base")  # no adapter uses it now
    assert not base.exists() and (root / "models").is_dir()


def test_discovered_runs_take_no_new_checkpoints(tmp_path: Path, clock: FixedClock) -> None:
    L.full_torch_checkpoint(tmp_path / "store/exp/a.pt")
    with (
        Store.open(tmp_path / "store", clock) as store,
        pytest.raises(InvalidRequestError, match="found on disk"),
    ):
        store.add_checkpoint("exp", "weights/new", {"f": b"x"})
    assert not (tmp_path / "store/runs/exp").exists()


def test_readonly_store_browses_and_refuses(tmp_path: Path, clock: FixedClock) -> None:
    """As root, permission bits do not stop writes, so read-only is forced (readonly=True)."""
    root = tmp_path / "store"
    L.hf_trainer_output(root / "out")
    with Store.open(root, clock, readonly=True) as store:
        assert len(store.list_run_checkpoints("out")) == 2
        for change in (
            lambda: store.delete_checkpoint("out", "weights/checkpoint-100"),
            lambda: store.set_ttl("out", "weights/checkpoint-100", 7200),
            lambda: store.set_public("out", "weights/checkpoint-100", True),
        ):
            with pytest.raises(ReadOnlyStoreError, match="read-only"):
                change()
    assert (root / "out/checkpoint-100").is_dir() and not (root / ".ckpt-tui").exists()
