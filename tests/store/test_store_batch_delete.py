"""A batch of deletes (`Store.delete_checkpoints`: one intent record, one metadata
transaction) answers each one as if they had been done one by one, and a fault at any file
call of the batch leaves each one either deleted (answered so) or whole (answered an error),
now and after a reopen."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from ckpt_tui.store import Store
from ckpt_tui.store.errors import NotFoundError, StorageError
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
