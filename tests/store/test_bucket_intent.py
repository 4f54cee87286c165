"""A delete record in the bucket is hostile input: whoever can write to the bucket can write
one, and the next open acts on it (against moto)."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore, deleting, intent
from ckpt_tui.store.bucket.deleting import DELETES, BucketDeleter
from ckpt_tui.store.bucket.intent import DeleteIntent
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.meta import Row
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support.bucket_places import bucket_place
from tests.support.s3_server import S3Server

LATER = FixedClock(SystemClock().now() + timedelta(days=1))
FOREVER_US = 2**62
"""A record's newest time that every object is older than."""
TRAINER_FILES = ("config.json", "model.safetensors", "trainer_state.json")
RUN = [f"store/team/checkpoint-{step}/{name}" for step in (10, 20) for name in TRAINER_FILES]
TINKER = ["store/runs/abc/weights/step-1/adapter.safetensors", "store/runs/abc/run.json"]
ROWS = [("team", "weights/checkpoint-10"), ("team", "weights/checkpoint-20")]


def seeded(s3: S3Server, bucket: str) -> BucketPlace:
    for key in [*RUN, *TINKER]:
        s3.put(bucket, key, b"{}")
    place = bucket_place(s3.endpoint, bucket)
    BucketMeta(place, False, 0).apply(upsert=[Row(*key, 0, public=True) for key in ROWS])
    return place


def planted(s3: S3Server, bucket: str, record: DeleteIntent | bytes) -> None:
    data = record if isinstance(record, bytes) else msgspec.json.encode(record)
    s3.put(bucket, f"store/.ckpt-tui/{DELETES}/planted.json", data)


def recovered(place: BucketPlace) -> deleting.Recovery:
    return BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER).recover()


def kept_rows(place: BucketPlace) -> list[tuple[str, str]]:
    return sorted((row.run_id, row.checkpoint_id) for row in BucketMeta(place, True, 0).rows())


def everything(s3: S3Server, bucket: str) -> list[str]:
    return [key for key in s3.keys(bucket) if ".ckpt-tui" not in key]


def test_a_record_naming_a_whole_run_is_reported_not_acted_on(s3: S3Server, s3_bucket: str) -> None:
    """The run `team` named as a checkpoint of the root run, with every key of it: its ids
    and keys agree with the path, but its objects hold two checkpoints (the walk says)."""
    place = seeded(s3, s3_bucket)
    keys = [key for key in RUN if key.startswith("store/team/")]
    planted(s3, s3_bucket, DeleteIntent("team", "_root_", "weights/team", keys, FOREVER_US))
    recovery = recovered(place)
    assert recovery.finished == []
    [problem] = recovery.problems
    assert "not acted on" in problem and "a run, not one checkpoint" in problem
    assert everything(s3, s3_bucket) == sorted([*RUN, *TINKER])
    assert kept_rows(place) == ROWS


def test_a_record_with_another_checkpoints_ids_drops_no_metadata(
    s3: S3Server, s3_bucket: str
) -> None:
    place = seeded(s3, s3_bucket)
    keys = [key for key in RUN if "checkpoint-10/" in key]
    theirs = DeleteIntent("team/checkpoint-10", *ROWS[1], keys, FOREVER_US)
    planted(s3, s3_bucket, theirs)
    recovery = recovered(place)
    assert recovery.finished == []
    assert "is not where checkpoint 'weights/checkpoint-20'" in recovery.problems[0]
    assert everything(s3, s3_bucket) == sorted([*RUN, *TINKER])
    assert kept_rows(place) == ROWS


def test_a_record_of_a_file_that_is_a_folder_drops_no_metadata(
    s3: S3Server, s3_bucket: str
) -> None:
    """A record in the form of a one-file checkpoint, for a path that is a folder: no object
    has that key, but the checkpoint is not gone."""
    place = seeded(s3, s3_bucket)
    single = DeleteIntent("team/checkpoint-20", *ROWS[1], ["store/team/checkpoint-20"], 0)
    planted(s3, s3_bucket, single)
    [outcome] = recovered(place).finished
    assert not outcome.done and outcome.deleted == []
    assert everything(s3, s3_bucket) == sorted([*RUN, *TINKER])
    assert kept_rows(place) == ROWS


def test_the_metadata_of_a_checkpoint_positively_gone_is_dropped(
    s3: S3Server, s3_bucket: str
) -> None:
    place = seeded(s3, s3_bucket)
    for key in RUN:
        if "checkpoint-20/" in key:
            s3.client.delete_object(Bucket=s3_bucket, Key=key)
    keys = [key for key in RUN if "checkpoint-20/" in key]
    planted(s3, s3_bucket, DeleteIntent("team/checkpoint-20", *ROWS[1], keys, FOREVER_US))
    [outcome] = recovered(place).finished
    assert outcome.done
    assert kept_rows(place) == ROWS[:1]
    assert s3.keys(s3_bucket, f"store/.ckpt-tui/{DELETES}/") == []


@pytest.mark.parametrize(
    ("checkpoint", "run_id", "checkpoint_id", "prefix"),
    [
        ("runs/abc", "runs", "weights/abc", "store/runs/abc/"),  # a Tinker run
        ("runs/abc/weights", "abc", "weights/weights", "store/runs/abc/weights/"),
        ("team", "_root_", "team", "store/team/"),  # no segment: no layout's id
        ("x/../team", "x", "weights/team", "store/team/"),
        ("", "_root_", "weights/store", "store/"),  # the store root
    ],
)
def test_a_record_naming_no_checkpoint_path_is_reported_not_acted_on(
    s3: S3Server, s3_bucket: str, checkpoint: str, run_id: str, checkpoint_id: str, prefix: str
) -> None:
    place = seeded(s3, s3_bucket)
    keys = [key for key in [*RUN, *TINKER] if key.startswith(prefix)]
    planted(s3, s3_bucket, DeleteIntent(checkpoint, run_id, checkpoint_id, keys, FOREVER_US))
    recovery = recovered(place)
    assert recovery.finished == []
    assert len(recovery.problems) == 1 and "not acted on" in recovery.problems[0]
    assert everything(s3, s3_bucket) == sorted([*RUN, *TINKER])
    assert kept_rows(place) == ROWS


def test_a_record_past_its_bounds_is_reported_not_acted_on(
    s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = seeded(s3, s3_bucket)
    keys = [key for key in RUN if "checkpoint-10/" in key]
    record = DeleteIntent("team/checkpoint-10", *ROWS[0], keys, FOREVER_US)
    monkeypatch.setattr(intent, "MAX_INTENT_KEYS", len(keys) - 1)
    planted(s3, s3_bucket, record)
    assert "more than 2" in recovered(place).problems[0]
    monkeypatch.undo()
    monkeypatch.setattr(intent, "MAX_INTENT_BYTES", 100)
    assert "more than a store document can be (100)" in recovered(place).problems[0]
    monkeypatch.undo()
    planted(s3, s3_bucket, msgspec.structs.replace(record, keys=[keys[0], *keys]))
    assert "names a key twice" in recovered(place).problems[0]
    climbing = "store/team/checkpoint-10/../checkpoint-20/model.safetensors"
    planted(s3, s3_bucket, msgspec.structs.replace(record, keys=[*keys, climbing]))
    assert "with an empty, '.' or '..' part" in recovered(place).problems[0]
    long_key = f"store/team/checkpoint-10/{'x' * 1024}"
    planted(s3, s3_bucket, msgspec.structs.replace(record, keys=[*keys, long_key]))
    assert "longer than 1024 bytes" in recovered(place).problems[0]
    assert everything(s3, s3_bucket) == sorted([*RUN, *TINKER])
    assert kept_rows(place) == ROWS


def test_a_hostile_record_is_a_problem_of_the_store_that_opens_the_bucket(
    s3: S3Server, s3_bucket: str
) -> None:
    seeded(s3, s3_bucket)
    keys = [key for key in RUN if key.startswith("store/team/")]
    planted(s3, s3_bucket, DeleteIntent("team", "_root_", "weights/team", keys, FOREVER_US))
    location = parse_location(f"s3://{s3_bucket}/store")
    assert location is not None
    store = BucketStore.open_bucket(ObjectStorage.open(location), LATER, settle_seconds=0)
    with store:
        problems = store.problems()
        checkpoints, _ = store.list_checkpoints(0, 100)
    assert not problems.complete
    assert "a run, not one checkpoint" in str(problems)
    assert sorted(c.tinker_path for c in checkpoints) == [
        "tinker://abc/weights/step-1",
        "tinker://team/weights/checkpoint-10",
        "tinker://team/weights/checkpoint-20",
    ]
    assert everything(s3, s3_bucket) == sorted([*RUN, *TINKER])


def test_an_open_that_finishes_a_delete_lists_what_it_left(s3: S3Server, s3_bucket: str) -> None:
    """The open lists the prefix while it looks for delete records: a listing made before
    the delete it then finishes is not the first look's (it would show the checkpoint)."""
    seeded(s3, s3_bucket)
    keys = [key for key in RUN if "checkpoint-20/" in key]
    planted(s3, s3_bucket, DeleteIntent("team/checkpoint-20", *ROWS[1], keys, FOREVER_US))
    location = parse_location(f"s3://{s3_bucket}/store")
    assert location is not None
    store = BucketStore.open_bucket(ObjectStorage.open(location), LATER, settle_seconds=0)
    with store:
        assert [outcome.done for outcome in store._changes.recovery.finished] == [True]
        checkpoints, _ = store.list_checkpoints(0, 100)
        assert store.problems().complete
    assert sorted(c.tinker_path for c in checkpoints) == [
        "tinker://abc/weights/step-1",
        "tinker://team/weights/checkpoint-10",
    ]
