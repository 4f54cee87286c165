"""Deleting a checkpoint's objects from a bucket (against moto, and a fault proxy in front)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import msgspec
import pytest
from obstore.store import LocalStore

from ckpt_tui.store.bucket.deleting import DELETES, BucketDeleter
from ckpt_tui.store.bucket.intent import DeleteIntent
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.errors import (
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    StorageFailedError,
    StoreError,
)
from ckpt_tui.store.meta import Row
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support.bucket_places import bucket_place
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server

LATER = FixedClock(SystemClock().now() + timedelta(days=1))
"""A clock by which every object written in a test has settled."""
STEP_10 = [
    "store/run/step-10/config.json",  # with the weights, one pretrained checkpoint
    *[f"store/run/step-10/model-{n}.safetensors" for n in range(4)],
]
NEIGHBOURS = [
    "store/run/step-100/model.safetensors",  # same beginning, another checkpoint
    "store/run/step-10.json",
    "store/run/run.json",
    "other/run/step-10/model.safetensors",  # the same name under another prefix
]


class Crash(Exception):
    pass


def seeded(s3: S3Server, bucket: str, keys: list[str] = STEP_10) -> None:
    for key in [*keys, *NEIGHBOURS]:
        s3.put(bucket, key, b"weights")


def deleter(place: BucketPlace, **options: object) -> BucketDeleter:
    return BucketDeleter(place, clock=LATER, **options)  # type: ignore[arg-type]


def records(s3: S3Server, bucket: str) -> list[str]:
    return s3.keys(bucket, f"store/.ckpt-tui/{DELETES}/")


def test_a_checkpoint_is_deleted_in_batches_and_nothing_else(s3: S3Server, s3_bucket: str) -> None:
    seeded(s3, s3_bucket)
    place = bucket_place(s3.endpoint, s3_bucket)
    meta = BucketMeta(place, False, 0)
    meta.apply(
        upsert=[Row("run", "weights/step-10", 0, public=True), Row("run", "weights/step-100", 0, 5)]
    )
    outcome = BucketDeleter(place, meta, clock=LATER, batch_keys=2).delete(
        "run/step-10", "run", "weights/step-10"
    )
    assert outcome.done
    assert sorted(outcome.deleted) == STEP_10
    assert outcome.requests == 3  # 5 keys, 2 per DeleteObjects
    assert [k for k in s3.keys(s3_bucket) if ".ckpt-tui" not in k] == sorted(NEIGHBOURS)
    assert records(s3, s3_bucket) == []
    assert [r.checkpoint_id for r in BucketMeta(place, True, 0).rows()] == ["weights/step-100"]


def test_a_thousand_keys_go_in_one_request(s3: S3Server, s3_bucket: str) -> None:
    keys = [f"store/run/step-10/shard-{n:04}" for n in range(1001)]
    seeded(s3, s3_bucket, keys)
    outcome = deleter(bucket_place(s3.endpoint, s3_bucket)).delete(
        "run/step-10", "run", "weights/step-10"
    )
    assert outcome.done and len(outcome.deleted) == 1001
    assert outcome.requests == 2
    assert s3.keys(s3_bucket, "store/run/step-10/") == []


@pytest.mark.parametrize("name", ["", "run/../other", "run//step-10", ".ckpt-tui/deletes", "."])
def test_a_name_outside_the_store_is_refused_before_any_request(
    s3: S3Server, s3_bucket: str, name: str
) -> None:
    seeded(s3, s3_bucket)
    with pytest.raises(InvalidRequestError, match="does not name a checkpoint"):
        deleter(bucket_place(s3.endpoint, s3_bucket)).delete(name, "run", "weights/step-10")
    assert len(s3.keys(s3_bucket)) == len(STEP_10) + len(NEIGHBOURS)


def test_a_checkpoint_still_being_written_is_refused(s3: S3Server, s3_bucket: str) -> None:
    seeded(s3, s3_bucket)
    place = bucket_place(s3.endpoint, s3_bucket)
    now = BucketDeleter(place, clock=SystemClock(), settle_seconds=3600)
    with pytest.raises(ConflictError, match=r"files changed less than 3600 s ago"):
        now.delete("run/step-10", "run", "weights/step-10")
    with pytest.raises(ConflictError, match=r"incomplete \(no \.metadata: DCP writes it last\)"):
        deleter(place).delete(
            "run/step-10",
            "run",
            "weights/step-10",
            incomplete_reason="no .metadata: DCP writes it last",
        )
    assert s3.keys(s3_bucket, "store/run/step-10/") == STEP_10
    assert records(s3, s3_bucket) == []


def test_a_checkpoint_with_no_objects_is_not_found(s3: S3Server, s3_bucket: str) -> None:
    seeded(s3, s3_bucket)
    with pytest.raises(NotFoundError):
        deleter(bucket_place(s3.endpoint, s3_bucket)).delete("run/step-1", "run", "weights/step-1")
    assert len(s3.keys(s3_bucket)) == len(STEP_10) + len(NEIGHBOURS)


def test_a_listing_naming_a_key_outside_the_checkpoint_deletes_nothing(
    s3: S3Server, s3_bucket: str
) -> None:
    seeded(s3, s3_bucket)
    faults = S3Faults(s3.endpoint)
    faults.extra_listed_key = "store/run/step-100/model.safetensors"
    with (
        run_server(faults) as endpoint,
        pytest.raises(StoreError, match="outside it; nothing was deleted"),
    ):
        deleter(bucket_place(endpoint, s3_bucket)).delete("run/step-10", "run", "weights/step-10")
    assert not [r for r in faults.requests if r[0] == "POST"]
    assert len(s3.keys(s3_bucket)) == len(STEP_10) + len(NEIGHBOURS)


def test_a_partial_failure_inside_a_batch_is_said_key_by_key(s3: S3Server, s3_bucket: str) -> None:
    keys = [*STEP_10, "store/run/step-10/locked-1", "store/run/step-10/locked-2"]
    seeded(s3, s3_bucket, keys)
    faults = S3Faults(s3.endpoint)
    faults.refuse_delete = "locked"
    with run_server(faults) as endpoint:
        place = bucket_place(endpoint, s3_bucket)
        outcome = deleter(place).delete("run/step-10", "run", "weights/step-10")
    assert not outcome.done
    assert outcome.requests == 1
    assert sorted(outcome.deleted) == STEP_10
    assert sorted(outcome.failed) == ["store/run/step-10/locked-1", "store/run/step-10/locked-2"]
    assert all("(code: AccessDenied)" in why for why in outcome.failed.values())
    error = outcome.error()
    assert isinstance(error, StorageFailedError)
    assert "5 of 7 objects were deleted; 2 could not be" in str(error)
    assert "AccessDenied" in str(error)
    assert s3.keys(s3_bucket, "store/run/step-10/") == keys[-2:]
    assert len(records(s3, s3_bucket)) == 1  # kept: the next open finishes it

    recovery = deleter(bucket_place(s3.endpoint, s3_bucket)).recover()
    assert [o.done for o in recovery.finished] == [True]
    assert sorted(recovery.finished[0].deleted) == keys[-2:]
    assert s3.keys(s3_bucket, "store/run/step-10/") == []
    assert records(s3, s3_bucket) == []
    assert len(s3.keys(s3_bucket)) == len(NEIGHBOURS)


def test_an_interrupted_delete_is_finished_at_the_next_open(s3: S3Server, s3_bucket: str) -> None:
    seeded(s3, s3_bucket)
    place = bucket_place(s3.endpoint, s3_bucket)
    meta = BucketMeta(place, False, 0)
    meta.apply(upsert=[Row("run", "weights/step-10", 0, public=True)])
    first = BucketDeleter(place, meta, clock=LATER, batch_keys=2)

    def crash(step: str) -> None:
        if step == "batch":
            raise Crash

    first.step_hook = crash
    with pytest.raises(Crash):
        first.delete("run/step-10", "run", "weights/step-10")
    left = [STEP_10[0], *STEP_10[3:]]  # one batch went: two weight files (weights go first)
    assert s3.keys(s3_bucket, "store/run/step-10/") == left

    browsing = deleter(place).recover(readonly=True)
    assert browsing.finished == []
    assert browsing.problems == [
        f"an interrupted delete of run/step-10 is waiting in {place.name}: open the store "
        "writable to finish it"
    ]
    assert s3.keys(s3_bucket, "store/run/step-10/") == left

    recovery = BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER).recover()
    assert [(o.checkpoint, o.done, len(o.deleted)) for o in recovery.finished] == [
        ("run/step-10", True, 3)
    ]
    assert s3.keys(s3_bucket, "store/run/step-10/") == []
    assert records(s3, s3_bucket) == []
    assert BucketMeta(place, True, 0).rows() == []  # its metadata dropped once it was gone
    assert len([k for k in s3.keys(s3_bucket) if ".ckpt-tui" not in k]) == len(NEIGHBOURS)


def test_recovery_leaves_a_key_written_again_after_the_delete_was_asked(
    s3: S3Server, s3_bucket: str
) -> None:
    seeded(s3, s3_bucket)
    place = bucket_place(s3.endpoint, s3_bucket)
    first = deleter(place)

    def crash(step: str) -> None:
        if step == "intent":
            raise Crash

    first.step_hook = crash
    with pytest.raises(Crash):
        first.delete("run/step-10", "run", "weights/step-10")
    record = records(s3, s3_bucket)[0]
    intent = msgspec.json.decode(
        s3.client.get_object(Bucket=s3_bucket, Key=record)["Body"].read(), type=DeleteIntent
    )
    # Every key rewritten since: the record's newest time before all of them (the seeding
    # may cross a second, and S3 times are whole seconds, so "newest - 1" left some out).
    older = msgspec.structs.replace(intent, newest_us=0)
    s3.put(s3_bucket, record, msgspec.json.encode(older))
    outcome = deleter(place).recover().finished[0]
    assert not outcome.done
    assert sorted(outcome.left) == STEP_10
    assert set(outcome.left.values()) == {"written again after the delete was asked"}
    assert s3.keys(s3_bucket, "store/run/step-10/") == STEP_10


def test_a_record_naming_a_key_outside_its_checkpoint_is_reported_not_acted_on(
    s3: S3Server, s3_bucket: str
) -> None:
    seeded(s3, s3_bucket)
    place = bucket_place(s3.endpoint, s3_bucket)
    hostile = DeleteIntent(
        "run/step-10",
        "run",
        "weights/step-10",
        [STEP_10[0], "store/run/step-100/model.safetensors"],
        0,
    )
    s3.put(s3_bucket, f"store/.ckpt-tui/{DELETES}/x.json", msgspec.json.encode(hostile))
    s3.put(s3_bucket, f"store/.ckpt-tui/{DELETES}/y.json", b"not json")
    recovery = deleter(place).recover()
    assert recovery.finished == []
    assert len(recovery.problems) == 2
    assert "outside it" in recovery.problems[0] and "not acted on" in recovery.problems[0]
    assert "damaged" in recovery.problems[1]
    assert len(s3.keys(s3_bucket)) == len(STEP_10) + len(NEIGHBOURS) + 2


def test_an_object_that_appears_during_the_delete_is_left_and_said(
    s3: S3Server, s3_bucket: str
) -> None:
    seeded(s3, s3_bucket)
    place = bucket_place(s3.endpoint, s3_bucket)
    engine = deleter(place)

    def writer_arrives(step: str) -> None:
        if step == "intent":
            s3.put(s3_bucket, "store/run/step-10/late.safetensors", b"new")

    engine.step_hook = writer_arrives
    outcome = engine.delete("run/step-10", "run", "weights/step-10")
    assert sorted(outcome.deleted) == STEP_10
    assert outcome.left == {
        "store/run/step-10/late.safetensors": "appeared while the checkpoint was being deleted"
    }
    assert not outcome.done
    assert s3.keys(s3_bucket, "store/run/step-10/") == ["store/run/step-10/late.safetensors"]
    assert records(s3, s3_bucket) == []  # the confirmed set is gone: nothing to finish


def test_a_link_inside_a_checkpoint_of_a_file_url_is_never_followed(tmp_path: Path) -> None:
    """obstore's local store (`file://`) lists through links: a link in a checkpoint to a
    folder outside the store made its files part of the checkpoint, and the delete removed
    them there. A key reached through a link is refused: nothing is deleted."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious.bin").write_bytes(b"not the store's")
    checkpoint = tmp_path / "store/run/step-10"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    (checkpoint / "extra").symlink_to(outside)
    place = BucketPlace(LocalStore(tmp_path / "store"), "", f"file://{tmp_path}/store")
    with pytest.raises(StoreError, match="link"):
        deleter(place).delete("run/step-10", "run", "weights/step-10")
    assert (outside / "precious.bin").read_bytes() == b"not the store's"
    assert (checkpoint / "model.safetensors").exists()
    assert not (tmp_path / "store/.ckpt-tui").exists()  # no record either: nothing was begun


def test_a_folder_swapped_for_a_link_after_the_check_is_never_followed(tmp_path: Path) -> None:
    """The listing's check finds no link; a folder of the checkpoint is then swapped for a
    link to a folder outside the store, before the delete: the delete goes through folder
    descriptors opened without following links, so the outside file stays, and the delete
    says the key is not deleted."""
    outside = tmp_path / "elsewhere/sub"
    outside.mkdir(parents=True)
    (outside / "shard.bin").write_bytes(b"not the store's")
    checkpoint = tmp_path / "store/run/step-10"
    (checkpoint / "sub").mkdir(parents=True)
    (checkpoint / "config.json").write_bytes(b"{}")
    (checkpoint / "sub/shard.bin").write_bytes(b"weights")
    place = BucketPlace(LocalStore(tmp_path / "store"), "", f"file://{tmp_path}/store")
    engine = deleter(place)

    def swap(step: str) -> None:
        if step == "intent":
            (checkpoint / "sub/shard.bin").rename(tmp_path / "moved-away.bin")
            (checkpoint / "sub").rmdir()
            (checkpoint / "sub").symlink_to(outside)

    engine.step_hook = swap
    outcome = engine.delete("run/step-10", "run", "weights/step-10")
    assert (outside / "shard.bin").read_bytes() == b"not the store's"
    assert not outcome.done
    assert outcome.deleted == [] and outcome.failed == {}  # not yet listed again: the link
    assert outcome.problem is not None and "reached through the link run/step-10/sub" in (
        outcome.problem
    )
    assert not (checkpoint / "config.json").exists()  # the store's own file went


def test_the_record_of_a_file_url_is_never_removed_through_a_link(tmp_path: Path) -> None:
    """The store's `.ckpt-tui` is swapped for a link to a folder outside the store (holding a
    file of the record's name) once the record is written: its removal goes through folder
    descriptors as the checkpoint's files do, so the outside file stays, and the delete says
    its record could not be removed."""
    checkpoint = tmp_path / "store/run/step-10"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_bytes(b"{}")
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    own = tmp_path / "store/.ckpt-tui"
    outside = tmp_path / "elsewhere"
    place = BucketPlace(LocalStore(tmp_path / "store"), "", f"file://{tmp_path}/store")
    engine = deleter(place)

    def swap(step: str) -> None:
        if step == "intent":
            own.rename(outside)
            own.symlink_to(outside)

    engine.step_hook = swap
    outcome = engine.delete("run/step-10", "run", "weights/step-10")
    assert sorted(outcome.deleted) == ["run/step-10/config.json", "run/step-10/model.safetensors"]
    assert len(list((outside / DELETES).iterdir())) == 1  # not removed through the link
    assert not outcome.done
    assert outcome.problem is not None
    assert "its delete record could not be removed" in outcome.problem
    assert "links are never followed" in outcome.problem
