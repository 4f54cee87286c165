"""The store never touches anything outside its folder, deletes survive crashes, and locking."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ckpt_tui.store import InvalidRequestError, NotFoundError, ReadOnlyStoreError, Store, StoreError
from ckpt_tui.store.trash import DELETE_STEPS
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support.privileges import python_as_a_user

BAD_NAMES = ["..", "../x", "a/b", "/etc", "a\x00b", "a\\b", "x..y", ""]


class Crash(Exception):
    """Stands in for the process dying after a delete step."""


def filled(root: Path, clock: FixedClock | None = None) -> Store:
    store = Store.open(root) if clock is None else Store.open(root, clock)
    store.create_run("run-a", "base")
    store.add_checkpoint("run-a", "weights/1", {"f.bin": b"abc", "d/g.bin": b"de"})
    return store


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_bad_run_ids_rejected_before_any_file_operation(store: Store, bad: str) -> None:
    store.create_run("ok", "base")
    calls: list[Callable[[], object]] = [
        lambda: store.create_run(bad, "base"),
        lambda: store.get_run(bad),
        lambda: store.list_run_checkpoints(bad),
        lambda: store.add_checkpoint(bad, "weights/1"),
        lambda: store.delete_checkpoint(bad, "weights/1"),
        lambda: store.set_public(bad, "weights/1", True),
        lambda: store.set_ttl(bad, "weights/1", None),
    ]
    before = sorted(p.name for p in store.root.parent.rglob("*"))
    for call in calls:
        with pytest.raises(InvalidRequestError):
            call()
    assert sorted(p.name for p in store.root.parent.rglob("*")) == before


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_bad_checkpoint_names_rejected(store: Store, bad: str) -> None:
    store.create_run("ok", "base")
    for checkpoint_id in (f"weights/{bad}", bad, f"nosuch/{bad or 'x'}"):
        with pytest.raises(InvalidRequestError):
            store.add_checkpoint("ok", checkpoint_id)
        with pytest.raises(InvalidRequestError):
            store.delete_checkpoint("ok", checkpoint_id)
        with pytest.raises(InvalidRequestError):
            store.get_checkpoint("ok", checkpoint_id)
    assert not (store.root / "runs" / "ok" / "weights").exists()


@pytest.mark.parametrize("bad", ["../escape", "/abs", "a/../../b", "a\\b", "n\x00ul"])
def test_bad_file_names_rejected(store: Store, bad: str) -> None:
    store.create_run("ok", "base")
    with pytest.raises(InvalidRequestError):
        store.add_checkpoint("ok", "weights/1", {bad: b"x"})
    assert not (store.root / "runs" / "ok" / "weights" / "1").exists()
    assert not (store.root.parent / "escape").exists()


def test_symlink_outside_survives_delete_and_counts_zero(tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.bin").write_bytes(b"x" * 1000)
    store = filled(tmp_path / "s")
    folder = store.checkpoint_dir("run-a", "weights/1")
    (folder / "link-dir").symlink_to(outside)
    (folder / "link-file").symlink_to(outside / "keep.bin")
    assert store.refresh_checkpoint("run-a", "weights/1").size_bytes == 5
    store.delete_checkpoint("run-a", "weights/1")
    assert (outside / "keep.bin").read_bytes() == b"x" * 1000
    assert not folder.exists()
    store.close()


def test_symlinked_run_folder_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "weights" / "1").mkdir(parents=True)
    (elsewhere / "run.json").write_text('{"base_model": "b", "created": "2025-01-01T00:00:00Z"}')
    with Store.open(tmp_path / "s") as store:
        (store.root / "runs" / "linked").symlink_to(elsewhere)
        store.rescan()
        with pytest.raises(NotFoundError):
            store.get_run("linked")
        with pytest.raises((NotFoundError, StoreError)):
            store.delete_checkpoint("linked", "weights/1")
    assert (elsewhere / "weights" / "1").is_dir()


def test_symlinked_segment_folder_refused_for_writes(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with Store.open(tmp_path / "s") as store:
        store.create_run("run-a", "base")
        (store.root / "runs" / "run-a" / "weights").symlink_to(elsewhere)
        with pytest.raises(StoreError, match="symbolic link"):
            store.add_checkpoint("run-a", "weights/1", {"f": b"x"})
    assert list(elsewhere.iterdir()) == []


def test_symlinked_runs_folder_refused_at_open(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "runs").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StoreError, match="symbolic link"):
        Store.open(tmp_path / "s")


@pytest.mark.parametrize("step", DELETE_STEPS)
def test_interrupted_delete_is_completed_on_reopen(tmp_path: Path, step: str) -> None:
    store = filled(tmp_path / "s")
    store.add_checkpoint("run-a", "weights/2", {"f": b"keep"})
    folder = store.checkpoint_dir("run-a", "weights/1")

    def crash_after(name: str) -> None:
        if name == step:
            raise Crash(name)

    store.delete_step_hook = crash_after
    with pytest.raises(Crash):
        store.delete_checkpoint("run-a", "weights/1")
    store.close()
    with Store.open(tmp_path / "s") as reopened:
        ids = [c.checkpoint_id for c in reopened.list_run_checkpoints("run-a")]
        with pytest.raises(NotFoundError):
            reopened.get_checkpoint("run-a", "weights/1")
    assert ids == ["weights/2"]
    assert not folder.exists()
    assert list((tmp_path / "s" / ".ckpt-tui" / "trash").iterdir()) == []


def test_concurrent_deletes_one_success(store: Store) -> None:
    store.create_run("run-a", "base")
    store.add_checkpoint("run-a", "weights/1", {"f": b"x"})
    results: list[str] = []
    barrier = threading.Barrier(20)

    def delete() -> None:
        barrier.wait()
        try:
            store.delete_checkpoint("run-a", "weights/1")
            results.append("ok")
        except NotFoundError:
            results.append("not found")

    threads = [threading.Thread(target=delete) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["not found"] * 19 + ["ok"]


def test_readonly_store_browses_and_refuses_changes(tmp_path: Path) -> None:
    """Forced with readonly=True: tests run as root, where chmod does not stop writes."""
    writable = filled(tmp_path / "s")
    writable.set_public("run-a", "weights/1", True)
    writable.close()
    before = sorted((p.relative_to(tmp_path), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    with Store.open(tmp_path / "s", readonly=True) as store:
        assert store.readonly
        ckpt = store.get_checkpoint("run-a", "weights/1")
        assert ckpt.size_bytes == 5 and ckpt.public  # metadata read from SQLite
        assert store.list_checkpoints()[1] == 1
        changes: list[Callable[[], object]] = [
            lambda: store.create_run("b", "base"),
            lambda: store.add_checkpoint("run-a", "weights/2"),
            lambda: store.delete_checkpoint("run-a", "weights/1"),
            lambda: store.set_public("run-a", "weights/1", False),
            lambda: store.set_ttl("run-a", "weights/1", 3600),
            lambda: store.refresh_checkpoint("run-a", "weights/1"),
        ]
        for change in changes:
            with pytest.raises(ReadOnlyStoreError, match="read-only"):
                change()
        assert store.sweep_expired() == []
    after = sorted((p.relative_to(tmp_path), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    assert after == before


def test_unwritable_folder_detected_as_readonly(tmp_path: Path) -> None:
    filled(tmp_path / "s").close()
    os.chmod(tmp_path / "s", 0o555)
    os.chmod(tmp_path / "s" / ".ckpt-tui", 0o555)
    code = f"from ckpt_tui.store import Store; print(Store.open({str(tmp_path / 's')!r}).readonly)"
    try:
        assert python_as_a_user(code).stdout.strip() == "True"  # as root without its powers
    finally:
        os.chmod(tmp_path / "s", 0o755)
        os.chmod(tmp_path / "s" / ".ckpt-tui", 0o755)
