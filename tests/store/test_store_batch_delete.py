"""A batch of deletes (`Store.delete_checkpoints`: one intent record, one metadata
transaction) answers each one as if they had been done one by one, and a fault at any file
call of the batch leaves each one either deleted (answered so) or whole (answered an error),
now and after a reopen."""

from __future__ import annotations

import errno
import os
from collections import Counter
from pathlib import Path

import pytest

from ckpt_tui.store import Store, trash
from ckpt_tui.store.errors import NotFoundError, StorageError
from ckpt_tui.store.layout import Layout
from tests.support.seed import seed_store
from tests.support.small_disk import FailingOs

ASKED = [("run-000", "weights/0000"), ("run-001", "weights/0001"), ("run-000", "weights/0002")]


def listed(store: Store) -> set[tuple[str, str]]:
    return {(c.run_id, c.checkpoint_id) for c in store.list_checkpoints(limit=1000)[0]}


def test_a_checkpoint_asked_for_twice_in_a_batch_is_deleted_once(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        made = set(seed_store(store, runs=2, per_run=3))
        twice = [ASKED[0], ASKED[1], ASKED[0], ("run-009", "weights/0000")]
        outcomes = store.delete_checkpoints(twice)
        assert outcomes[:2] == [None, None]
        assert isinstance(outcomes[2], NotFoundError) and isinstance(outcomes[3], NotFoundError)
        assert listed(store) == made - set(ASKED[:2])


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_a_fault_at_any_file_call_of_a_batch_deletes_each_one_or_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    answered: list[tuple[str | None, list[str]]] = []
    for at in range(1, 80):
        root = tmp_path / f"store-{at}"
        with Store.open(root) as store:
            made = set(seed_store(store, runs=2, per_run=3))
        store = Store.open(root)
        with monkeypatch.context() as patch:
            faults = FailingOs(patch, at, code)
            outcomes = store.delete_checkpoints(ASKED)
            store.wait_for_purges()
        for outcome in outcomes:
            assert outcome is None or isinstance(outcome, StorageError), outcome
        deleted = {key for key, outcome in zip(ASKED, outcomes, strict=True) if outcome is None}
        assert listed(store) == made - deleted, faults.failed
        store.close()
        with Store.open(root) as reopened:
            assert listed(reopened) == made - deleted, faults.failed
        files = {p.parent.parent.name + "/" + p.name for p in (root / "runs").glob("*/weights/*")}
        assert files == {f"{run_id}/{cid.split('/')[1]}" for run_id, cid in made - deleted}
        assert list((root / ".ckpt-tui" / "trash").iterdir()) == []
        answered.append((faults.failed, ["ok" if o is None else "error" for o in outcomes]))
        if faults.failed is None:
            break
    failed = [name for name, _ in answered if name is not None]
    assert len(failed) >= 6, answered  # the intent, each move, dropping it, the purges...
    assert any("error" in outcomes for _, outcomes in answered)
    assert answered[-1] == (None, ["ok", "ok", "ok"])


def test_a_batch_opens_each_folder_it_deletes_from_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`trash.BatchFolders`: six deletes from two runs open each run's folders once, not once
    per delete (serve's CPU per delete, issue 26)."""
    opened = Counter[str]()
    real_open = os.open

    def counting_open(
        path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None
    ) -> int:
        opened[os.path.basename(path)] += 1
        return real_open(path, flags, mode, dir_fd=dir_fd)

    with Store.open(tmp_path / "s") as store:
        made = seed_store(store, runs=2, per_run=3)
        with monkeypatch.context() as patch:
            patch.setattr(os, "open", counting_open)
            outcomes = store.delete_checkpoints(made)
        store.wait_for_purges()
        assert outcomes == [None] * 6
        assert listed(store) == set()
    assert (opened["run-000"], opened["run-001"], opened["weights"]) == (1, 1, 2)


def test_a_folder_a_batch_moved_away_is_resolved_again_for_the_next_delete(
    tmp_path: Path,
) -> None:
    """Guard: after a delete of the batch moves a folder the batch had opened a folder below,
    a later delete under it is not found (as alone), rather than moved out of the trash."""
    layout = Layout(tmp_path / "s")
    outer = layout.root / "runs" / "r" / "weights" / "outer"
    for name in ("a", "b"):
        (outer / "inner" / name).mkdir(parents=True)
    slots = [trash.new_slot(layout) for _ in range(3)]
    folders = trash.BatchFolders(layout)
    try:
        trash.move(layout, outer / "inner" / "a", slots[0], folders=folders)
        trash.move(layout, outer, slots[1], folders=folders)
        with pytest.raises(FileNotFoundError):
            trash.move(layout, outer / "inner" / "b", slots[2], folders=folders)
    finally:
        folders.close()
    assert (slots[1] / trash.FILES / "inner" / "b").is_dir()
    assert not (slots[2] / trash.FILES).exists()


def test_a_checkpoint_saved_from_outside_during_a_batch_is_listed_after_it(
    tmp_path: Path,
) -> None:
    """After a batch, only the folders its deletes left are looked at again
    (`RunEntry.signature_after`): a checkpoint saved meanwhile in another folder of the run
    is still noticed, not taken for the store's own change."""
    root = tmp_path / "s"
    with Store.open(root) as store:
        made = seed_store(store, runs=1, per_run=2)
    sampler = root / "runs" / "run-000" / "sampler_weights"
    sampler.mkdir()

    def meanwhile(step: str) -> None:
        if step == "move":
            (sampler / "late").mkdir()
            (sampler / "late" / "adapter.bin").write_bytes(b"x" * 16)
            os.utime(sampler / "late" / "adapter.bin", (1e9, 1e9))  # long settled

    with Store.open(root) as store:
        store.delete_step_hook = meanwhile
        assert store.delete_checkpoints([made[0]]) == [None]
        store.delete_step_hook = None
        listed_ids = {c.checkpoint_id for c in store.list_run_checkpoints("run-000")}
    assert listed_ids == {made[1][1], "sampler_weights/late"}
