"""The local store: layout, listing order, reconciling with outside changes, TTL, persistence."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from ckpt_tui.api_types import encode
from ckpt_tui.store import ConflictError, InvalidRequestError, NotFoundError, Store, StoreError
from ckpt_tui.timekeeping.clock import FixedClock

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)


def make_run(store: Store, run_id: str = "run-a", **kwargs: object) -> None:
    store.create_run(run_id, "Qwen/Qwen3-8B", lora_rank=32, **kwargs)  # type: ignore[arg-type]


def test_layout_on_disk(store: Store, clock: FixedClock) -> None:
    make_run(store, extra={"train_mlp": True, "train_attn": False})
    store.add_checkpoint("run-a", "weights/0001", {"a.bin": b"12345", "sub/b.bin": b"67"})
    store.add_checkpoint("run-a", "sampler_weights/0001", {"s.bin": b"x"})
    run_dir = store.root / "runs" / "run-a"
    run_json = json.loads((run_dir / "run.json").read_text())
    assert run_json["base_model"] == "Qwen/Qwen3-8B"
    assert run_json["lora_rank"] == 32
    assert run_json["train_mlp"] is True
    assert run_json["created"] == "2025-01-01T12:00:00Z"
    assert (run_dir / "weights" / "0001" / "sub" / "b.bin").read_bytes() == b"67"
    assert (run_dir / "sampler_weights" / "0001" / "s.bin").is_file()
    assert (store.root / ".ckpt-tui" / "meta.sqlite3").is_file()
    ckpt = store.get_checkpoint("run-a", "weights/0001")
    assert ckpt.tinker_path == "tinker://run-a/weights/0001"
    assert ckpt.checkpoint_type == "training"
    assert ckpt.size_bytes == 7
    assert store.get_checkpoint("run-a", "sampler_weights/0001").checkpoint_type == "sampler"
    assert store.checkpoint_dir("run-a", "weights/0001") == run_dir / "weights" / "0001"


def test_weights_info_from_run_json(store: Store) -> None:
    make_run(store, extra={"train_mlp": True, "train_attn": False})
    store.add_checkpoint("run-a", "weights/0001")
    info = store.weights_info("run-a", "weights/0001")
    assert (info.base_model, info.is_lora, info.lora_rank) == ("Qwen/Qwen3-8B", True, 32)
    assert (info.train_mlp, info.train_attn, info.train_unembed) == (True, False, None)


def test_orders(store: Store, clock: FixedClock) -> None:
    make_run(store, "old")
    clock.advance(timedelta(minutes=1))
    make_run(store, "new")
    clock.advance(timedelta(minutes=1))
    store.add_checkpoint("old", "weights/b")
    store.add_checkpoint("old", "sampler_weights/b")
    clock.advance(timedelta(minutes=1))
    store.add_checkpoint("old", "weights/a")
    ids = [c.checkpoint_id for c in store.list_run_checkpoints("old")]
    assert ids == ["sampler_weights/b", "weights/b", "weights/a"]  # oldest first, ties by id
    page, total = store.list_checkpoints()
    assert total == 3
    assert [c.tinker_path for c in page] == [
        "tinker://old/weights/a",
        "tinker://old/sampler_weights/b",
        "tinker://old/weights/b",
    ]
    assert [c.checkpoint_id for c in store.list_checkpoints(1, 1)[0]] == ["sampler_weights/b"]
    runs, count = store.list_runs()
    assert [r.training_run_id for r in runs] == ["old", "new"] and count == 2
    assert runs[0].last_checkpoint is not None
    assert runs[0].last_checkpoint.checkpoint_id == "weights/a"
    assert runs[0].last_sampler_checkpoint is not None
    assert runs[0].last_sampler_checkpoint.checkpoint_id == "sampler_weights/b"
    assert runs[0].last_request_time == clock.now()
    clock.advance(timedelta(minutes=1))
    store.add_checkpoint("new", "weights/x")
    assert [r.training_run_id for r in store.list_runs(0, 1)[0]] == ["new"]


def test_errors_name_the_ids(store: Store) -> None:
    with pytest.raises(NotFoundError, match="training run 'abc' not found"):
        store.get_run("abc")
    make_run(store, "abc")
    with pytest.raises(NotFoundError, match="checkpoint 'weights/0001' not found in run 'abc'"):
        store.get_checkpoint("abc", "weights/0001")
    with pytest.raises(NotFoundError, match="training run 'nope' not found"):
        store.add_checkpoint("nope", "weights/1")
    store.add_checkpoint("abc", "weights/0001")
    with pytest.raises(ConflictError):
        store.add_checkpoint("abc", "weights/0001")
    with pytest.raises(ConflictError):
        make_run(store, "abc")


def test_publish_conflicts(store: Store) -> None:
    make_run(store)
    store.add_checkpoint("run-a", "weights/1")
    assert store.set_public("run-a", "weights/1", True).public
    with pytest.raises(ConflictError, match="already public"):
        store.set_public("run-a", "weights/1", True)
    assert not store.set_public("run-a", "weights/1", False).public
    with pytest.raises(ConflictError, match="already private"):
        store.set_public("run-a", "weights/1", False)


def test_the_encoded_page_is_the_page_encoded_and_follows_changes(
    store: Store, clock: FixedClock
) -> None:
    make_run(store)
    for name in ("weights/1", "weights/2", "sampler_weights/2"):
        store.add_checkpoint("run-a", name)
        clock.advance(timedelta(seconds=1))

    def both() -> tuple[list[bytes], list[bytes]]:
        encoded, total = store.encoded_checkpoints(0, 10)
        checkpoints, same_total = store.list_checkpoints(0, 10)
        assert total == same_total == len(checkpoints)
        return [bytes(raw) for raw in encoded], [encode(ckpt) for ckpt in checkpoints]

    first, expected = both()
    assert first == expected and len(first) == 3
    store.set_public("run-a", "weights/1", True)
    store.set_ttl("run-a", "weights/2", 7200)
    after, expected = both()
    assert after == expected and after != first
    assert b'"public":true' in after[2] and b'"expires_at":"2025-01-01T14:00:03Z"' in after[1]


def test_ttl_bounds_and_clear(store: Store, clock: FixedClock) -> None:
    make_run(store)
    store.add_checkpoint("run-a", "weights/1")
    for bad in (3599, 10 * 365 * 86400 + 1, -5):
        with pytest.raises(InvalidRequestError, match=r"3600.*315360000"):
            store.set_ttl("run-a", "weights/1", bad)
    ckpt = store.set_ttl("run-a", "weights/1", 3600)
    assert ckpt.expires_at == clock.now() + timedelta(hours=1)
    assert store.set_ttl("run-a", "weights/1", None).expires_at is None


def test_expired_hidden_at_once_then_swept(store: Store, clock: FixedClock) -> None:
    make_run(store)
    store.add_checkpoint("run-a", "weights/1", {"f": b"x"})
    store.add_checkpoint("run-a", "weights/2")
    store.set_ttl("run-a", "weights/1", 3600)
    folder = store.checkpoint_dir("run-a", "weights/1")
    clock.advance(timedelta(seconds=3600))
    assert [c.checkpoint_id for c in store.list_run_checkpoints("run-a")] == ["weights/2"]
    assert store.list_checkpoints()[1] == 1
    with pytest.raises(NotFoundError):
        store.get_checkpoint("run-a", "weights/1")
    assert folder.exists()  # hidden, not yet removed
    assert store.sweep_expired() == ["tinker://run-a/weights/1"]
    assert not folder.exists()
    assert store.sweep_expired() == []


def test_expired_checkpoints_swept_at_open(tmp_path: Path, clock: FixedClock) -> None:
    with Store.open(tmp_path / "s", clock) as store:
        make_run(store)
        store.add_checkpoint("run-a", "weights/1", expires_at=T0 + timedelta(hours=2))
    clock.advance(timedelta(hours=3))
    with Store.open(tmp_path / "s", clock) as store:
        assert store.list_run_checkpoints("run-a") == []
    assert not (tmp_path / "s" / "runs" / "run-a" / "weights" / "1").exists()


def test_metadata_persists_across_reopen(tmp_path: Path, clock: FixedClock) -> None:
    with Store.open(tmp_path / "s", clock) as store:
        make_run(store, user_metadata={"team": "x"})
        store.add_checkpoint("run-a", "weights/1", {"f": b"abc"}, user_metadata={"loss": "0.5"})
        store.set_public("run-a", "weights/1", True)
        store.set_ttl("run-a", "weights/1", 7 * 86400)
        before = store.get_checkpoint("run-a", "weights/1")
    with Store.open(tmp_path / "s", clock) as store:
        after = store.get_checkpoint("run-a", "weights/1")
        assert store.get_run("run-a").user_metadata == {"team": "x"}
    assert after == before
    assert after.public and after.user_metadata == {"loss": "0.5"} and after.size_bytes == 3
    assert after.expires_at == T0 + timedelta(days=7)


def test_folder_added_by_hand_appears_with_mtime(store: Store) -> None:
    make_run(store)
    folder = store.root / "runs" / "run-a" / "weights" / "manual"
    folder.mkdir(parents=True)
    (folder / "w.bin").write_bytes(b"hello")
    stamp = datetime(2024, 6, 1, tzinfo=timezone.utc).timestamp()
    os.utime(folder, (stamp, stamp))
    ckpt = store.list_run_checkpoints("run-a")[0]  # a run's list checks its own folders
    assert ckpt.checkpoint_id == "weights/manual"
    assert ckpt.time == datetime(2024, 6, 1, tzinfo=timezone.utc)
    assert ckpt.size_bytes == 5
    store.rescan()
    assert store.list_checkpoints()[0][0].checkpoint_id == "weights/manual"


def test_run_added_and_removed_by_hand(store: Store) -> None:
    make_run(store)
    store.add_checkpoint("run-a", "weights/1")
    shutil.copytree(store.root / "runs" / "run-a", store.root / "runs" / "run-b")
    store.rescan()
    assert {r.training_run_id for r in store.list_runs()[0]} == {"run-a", "run-b"}
    assert store.list_checkpoints()[1] == 2
    shutil.rmtree(store.root / "runs" / "run-a")
    store.rescan()
    assert [r.training_run_id for r in store.list_runs()[0]] == ["run-b"]
    with pytest.raises(NotFoundError):
        store.get_run("run-a")


def test_folder_removed_by_hand_disappears_and_row_dropped(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        make_run(store)
        store.add_checkpoint("run-a", "weights/1")
        store.add_checkpoint("run-a", "weights/2")
        store.set_public("run-a", "weights/1", True)
        shutil.rmtree(store.checkpoint_dir("run-a", "weights/1"))
        assert [c.checkpoint_id for c in store.list_run_checkpoints("run-a")] == ["weights/2"]
        # the row is gone too: a folder of that name made later starts private
        store.add_checkpoint("run-a", "weights/1")
        assert not store.get_checkpoint("run-a", "weights/1").public


def test_file_added_inside_checkpoint_needs_refresh(store: Store) -> None:
    """Documented: sizes are cached; a file added by hand shows after refresh_checkpoint."""
    make_run(store)
    store.add_checkpoint("run-a", "weights/1", {"a": b"12"})
    (store.checkpoint_dir("run-a", "weights/1") / "big.bin").write_bytes(b"x" * 100)
    store.rescan()
    assert store.get_checkpoint("run-a", "weights/1").size_bytes == 2
    assert store.refresh_checkpoint("run-a", "weights/1").size_bytes == 102


def test_sparse_file_via_checkpoint_dir(store: Store) -> None:
    make_run(store)
    store.add_checkpoint("run-a", "weights/1")
    with open(store.checkpoint_dir("run-a", "weights/1") / "model.safetensors", "wb") as out:
        out.truncate(5 * 2**30)
    assert store.refresh_checkpoint("run-a", "weights/1").size_bytes == 5 * 2**30


def test_corrupted_run_json_still_listed(store: Store) -> None:
    (store.root / "runs" / "broken" / "weights" / "1").mkdir(parents=True)
    (store.root / "runs" / "broken" / "run.json").write_text("{not json")
    run = store.get_run("broken")
    assert run.corrupted
    assert store.list_run_checkpoints("broken")[0].checkpoint_id == "weights/1"
    with pytest.raises(StoreError, match=r"run\.json"):
        store.weights_info("broken", "weights/1")


def test_store_made_by_hand_is_indexed_and_cached(tmp_path: Path) -> None:
    runs = tmp_path / "s" / "runs"
    for i in range(30):
        (runs / "r" / "weights" / f"{i:02d}").mkdir(parents=True)
        (runs / "r" / "weights" / f"{i:02d}" / "f").write_bytes(b"x" * i)
    with Store.open(tmp_path / "s") as store:
        sizes = [c.size_bytes for c in store.list_run_checkpoints("r")]
    assert sorted(s or 0 for s in sizes) == list(range(30))
    (runs / "r" / "weights" / "29" / "g").write_bytes(b"more")
    with Store.open(tmp_path / "s") as store:  # the cached size measured other files
        grown = store.get_checkpoint("r", "weights/29")
    assert grown.size_bytes == 33
    assert (grown.user_metadata or {}).get("incomplete") == "true"  # it just changed


def test_root_checks(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(StoreError, match="not a folder"):
        Store.open(not_a_dir)
    with pytest.raises(StoreError, match="does not exist"):
        Store.open(tmp_path / "missing", create=False)
    store = Store.open(tmp_path / "made" / "here")
    store.close()
    assert (tmp_path / "made" / "here" / "runs").is_dir()
    with pytest.raises(StoreError, match="closed"):
        store.list_runs()
