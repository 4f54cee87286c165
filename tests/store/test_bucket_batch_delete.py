"""Checkpoints deleted together from a bucket: one intent record, DeleteObjects spanning
checkpoints, few listings, and each checkpoint's own outcome (against moto, the requests
counted by a proxy in front of it)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import msgspec
import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore, deleting
from ckpt_tui.store.bucket.deleting import DELETES, BucketDeleter, DeleteAsk, DeleteOutcome
from ckpt_tui.store.bucket.intent import MAX_INTENT_CHECKPOINTS, BatchIntent, DeleteIntent
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.errors import ConflictError, NotFoundError, StorageFailedError, StoreError
from ckpt_tui.store.meta import Row
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support import layouts as L
from tests.support.bucket_places import bucket_place
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server

LATER = FixedClock(SystemClock().now() + timedelta(days=1))
"""A clock by which every object written in a test has settled."""
STEPS = (1, 2, 3)
NEIGHBOURS = [
    "store/run/step-100/model.safetensors",  # same beginning, another checkpoint
    "store/run/step-1.json",  # a file named like a checkpoint plus more
    "store/run/run.json",
    "store/other/step-1/model.safetensors",  # the same name in another folder
]


def shards(step: int, names: tuple[str, ...] = ("a", "b")) -> list[str]:
    """A checkpoint folder: weight files and the config that makes them one checkpoint (the
    walk gives it the id `weights/step-<step>`)."""
    weights = [f"store/run/step-{step}/{name}.safetensors" for name in names]
    return sorted([*weights, f"store/run/step-{step}/config.json"])


def seeded(s3: S3Server, bucket: str, keys: list[str]) -> BucketMeta:
    """`keys` and the neighbours written; step-1 to step-3 and step-100 published."""
    for key in [*keys, *NEIGHBOURS]:
        s3.put(bucket, key, b"weights")
    meta = BucketMeta(bucket_place(s3.endpoint, bucket), False, 0)
    published = [Row("run", f"weights/step-{step}", 0, public=True) for step in (*STEPS, 100)]
    meta.apply(upsert=published)
    return meta


def asks(*steps: int) -> list[DeleteAsk]:
    return [DeleteAsk(f"run/step-{step}", "run", f"weights/step-{step}") for step in steps]


def published(s3: S3Server, bucket: str) -> list[str]:
    meta = BucketMeta(bucket_place(s3.endpoint, bucket), True, 0)
    return sorted(row.checkpoint_id for row in meta.rows())


def records(s3: S3Server, bucket: str) -> list[str]:
    return s3.keys(bucket, f"store/.ckpt-tui/{DELETES}/")


def deletes(faults: S3Faults) -> int:
    return sum(1 for method, _, query in faults.requests if method == "POST" and "delete" in query)


def outcome(result: DeleteOutcome | StoreError) -> DeleteOutcome:
    assert isinstance(result, DeleteOutcome), result
    return result


def test_thirty_checkpoints_deleted_in_one_batch_send_one_delete_objects_for_their_keys(
    tmp_path: Path, s3: S3Server, s3_bucket: str
) -> None:
    """The batch the server hands the store (the DELETEs asked for together): one record,
    one DeleteObjects for its 210 keys and one to remove the record, one listing of the
    checkpoints' folder before and one after. One delete each sent 60 DeleteObjects, 30
    records and 60 listings."""
    steps = tuple(range(100, 3100, 100))
    L.hf_trainer_output(tmp_path / "box/trainer", steps=(*steps, 5000))
    s3.upload(s3_bucket, "p", tmp_path / "box")
    before = s3.keys(s3_bucket)
    # kept before: the first change's one-off writes (a probe, the store id) are not the batch's
    BucketMeta(bucket_place(s3.endpoint, s3_bucket, "p"), False, 0).ensure_store_id()
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as endpoint:
        location = parse_location(f"s3://{s3_bucket}/p", endpoint=endpoint)
        assert location is not None
        with BucketStore.open_bucket(ObjectStorage.open(location), LATER) as store:
            faults.requests.clear()
            keys = [("trainer", f"weights/checkpoint-{step}") for step in steps]
            assert store.delete_checkpoints(keys) == [None] * 30
            sent = list(faults.requests)
            listed = [c.checkpoint_id for c in store.list_checkpoints(0, 100)[0]]
    assert listed == ["weights/checkpoint-5000"]
    assert sum(1 for method, _, query in sent if method == "POST" and "delete" in query) == 2
    assert sum(1 for method, _, _ in sent if method == "PUT") == 1
    assert [query for method, _, query in sent if method == "GET"] == [
        "list-type=2&prefix=p%2Ftrainer%2F"
    ] * 2
    doomed = {key for key in before if key.split("/")[2] in {f"checkpoint-{s}" for s in steps}}
    assert len(doomed) == 30 * 7
    assert [k for k in s3.keys(s3_bucket) if ".ckpt-tui/" not in k] == sorted(set(before) - doomed)
    assert s3.keys(s3_bucket, f"p/.ckpt-tui/{DELETES}/") == []


def test_the_store_answers_each_checkpoint_of_a_batch_with_its_own_outcome(
    tmp_path: Path, s3: S3Server, s3_bucket: str
) -> None:
    """A key the bucket refuses fails its own checkpoint's DELETE (the store then lists what
    is left); one not found is that one's error; one asked for twice is deleted once, the
    second answered as if asked after it; the others are gone."""
    L.hf_trainer_output(tmp_path / "box/trainer", steps=(100, 200, 300, 400))
    s3.upload(s3_bucket, "p", tmp_path / "box")
    s3.put(s3_bucket, "p/trainer/checkpoint-200/locked.bin", b"x")
    faults = S3Faults(s3.endpoint)
    faults.refuse_delete = "locked"
    with run_server(faults) as endpoint:
        location = parse_location(f"s3://{s3_bucket}/p", endpoint=endpoint)
        assert location is not None
        with BucketStore.open_bucket(ObjectStorage.open(location), LATER) as store:
            ids = ["checkpoint-100", "checkpoint-200", "checkpoint-7", "checkpoint-300"]
            again = ["checkpoint-300", "checkpoint-200"]
            keys = [("trainer", f"weights/{name}") for name in [*ids, *again]]
            gone, refused, missing, third, twice, refused_twice = store.delete_checkpoints(keys)
            listed = [c.checkpoint_id for c in store.list_checkpoints(0, 100)[0]]
    assert gone is None and third is None
    assert isinstance(refused, StorageFailedError)
    assert "deleting trainer/checkpoint-200 is not finished" in str(refused)
    assert "AccessDenied" in str(refused)
    assert isinstance(missing, StoreError) and "checkpoint-7" in str(missing)
    # the same checkpoint twice in one batch: the second as if asked after the first (as on a
    # folder), which deleted it
    assert isinstance(twice, NotFoundError)
    assert str(twice) == "checkpoint 'weights/checkpoint-300' not found in run 'trainer'"
    assert refused_twice is refused  # the first was not deleted: the second says the same
    assert listed == ["weights/checkpoint-200", "weights/checkpoint-400"]
    assert s3.keys(s3_bucket, "p/trainer/checkpoint-100/") == []
    assert s3.keys(s3_bucket, "p/trainer/checkpoint-200/") == [
        "p/trainer/checkpoint-200/locked.bin"
    ]
    assert len(s3.keys(s3_bucket, "p/trainer/checkpoint-400/")) == 7


def test_a_batch_in_one_folder_deletes_its_checkpoints_and_nothing_else(
    s3: S3Server, s3_bucket: str
) -> None:
    keys = [*shards(1), *shards(2)]
    seeded(s3, s3_bucket, keys)
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as endpoint:
        place = bucket_place(endpoint, s3_bucket)
        engine = BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER)
        results = [outcome(r) for r in engine.delete_batch(asks(1, 2))]
    assert [(o.checkpoint, o.done, sorted(o.deleted)) for o in results] == [
        ("run/step-1", True, shards(1)),
        ("run/step-2", True, shards(2)),
    ]
    assert [o.requests for o in results] == [1, 1]  # the same one DeleteObjects
    assert faults.listed() == ["store/run/", "store/run/"]
    assert [k for k in s3.keys(s3_bucket) if ".ckpt-tui" not in k] == sorted(NEIGHBOURS)
    assert published(s3, s3_bucket) == ["weights/step-100", "weights/step-3"]
    assert records(s3, s3_bucket) == []


def test_a_key_refused_inside_a_batch_fails_only_its_own_checkpoint(
    s3: S3Server, s3_bucket: str
) -> None:
    locked = "store/run/step-2/locked.json"  # not a weight file: what is left is no checkpoint
    keys = [*shards(1), *shards(2), locked, *shards(3)]
    meta = seeded(s3, s3_bucket, keys)  # its writes go straight to the server
    faults = S3Faults(s3.endpoint)
    faults.refuse_delete = "locked"
    with run_server(faults) as endpoint:
        engine = BucketDeleter(bucket_place(endpoint, s3_bucket), meta, clock=LATER)
        first, second, third = (outcome(r) for r in engine.delete_batch(asks(1, 2, 3)))
    assert deletes(faults) == 1  # one DeleteObjects for the three checkpoints' keys
    assert first.done and third.done
    assert not second.done
    assert sorted(second.deleted) == shards(2)
    assert list(second.failed) == [locked]
    assert "AccessDenied" in second.failed[locked]
    error = second.error()
    assert isinstance(error, StorageFailedError)
    assert "deleting run/step-2 is not finished: 3 of 4 objects were deleted" in str(error)
    assert s3.keys(s3_bucket, "store/run/step-") == sorted([locked, *NEIGHBOURS[:2]])
    # 1 and 3 gone, in one write
    assert published(s3, s3_bucket) == ["weights/step-100", "weights/step-2"]
    (record,) = records(s3, s3_bucket)  # kept: a key of it is left to delete
    body = s3.client.get_object(Bucket=s3_bucket, Key=record)["Body"].read()
    kept = msgspec.json.decode(body, type=BatchIntent)
    assert [intent.checkpoint for intent in kept.batch] == [
        "run/step-1",
        "run/step-2",
        "run/step-3",
    ]

    place = bucket_place(s3.endpoint, s3_bucket)  # the next open, the key no longer refused
    recovery = BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER).recover()
    assert [(o.checkpoint, o.done, o.deleted) for o in recovery.finished] == [
        ("run/step-1", True, []),
        ("run/step-2", True, [locked]),
        ("run/step-3", True, []),
    ]
    assert recovery.problems == []
    assert [k for k in s3.keys(s3_bucket) if ".ckpt-tui" not in k] == sorted(NEIGHBOURS)
    assert published(s3, s3_bucket) == ["weights/step-100"]
    assert records(s3, s3_bucket) == []


def test_a_checkpoint_refused_in_a_batch_is_refused_alone_and_the_others_go_ahead(
    s3: S3Server, s3_bucket: str
) -> None:
    """Still being written (the layout's own sign), a key outside its prefix in its listing,
    or no objects at all: that checkpoint is refused, nothing of it is deleted or recorded,
    and the rest of the batch is deleted."""
    other = ["store/other/step-9/model.safetensors"]
    keys = [*shards(1), *shards(2), *shards(3), *other]
    seeded(s3, s3_bucket, keys)
    faults = S3Faults(s3.endpoint)
    faults.extra_listed_key = "store/run/step-100/model.safetensors"
    faults.extra_listed_for = "store/other/step-9/"
    batch = [
        *asks(1),
        DeleteAsk("run/step-2", "run", "weights/step-2", "no .metadata: DCP writes it last"),
        DeleteAsk("other/step-9", "other", "weights/step-9"),
        DeleteAsk("run/step-7", "run", "weights/step-7"),
        *asks(3),
    ]
    recorded: list[BatchIntent] = []

    def read_record(step: str) -> None:
        if step == "intent":
            (record,) = records(s3, s3_bucket)
            body = s3.client.get_object(Bucket=s3_bucket, Key=record)["Body"].read()
            recorded.append(msgspec.json.decode(body, type=BatchIntent))

    with run_server(faults) as endpoint:
        place = bucket_place(endpoint, s3_bucket)
        engine = BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER)
        engine.step_hook = read_record
        results = engine.delete_batch(batch)
    first, written, outside, missing, third = results
    assert [[i.checkpoint for i in record.batch] for record in recorded] == [
        ["run/step-1", "run/step-3"]
    ]
    assert outcome(first).done and outcome(third).done
    assert isinstance(written, ConflictError)
    assert "refusing to delete run/step-2: it is incomplete (no .metadata" in str(written)
    assert isinstance(outside, StoreError)
    assert "outside it; nothing was deleted" in str(outside)
    assert "run/step-7" in str(missing)
    assert s3.keys(s3_bucket, "store/run/step-2/") == shards(2)
    assert s3.keys(s3_bucket, "store/other/") == sorted([*other, NEIGHBOURS[3]])
    assert s3.keys(s3_bucket, "store/run/step-1/") == s3.keys(s3_bucket, "store/run/step-3/") == []
    assert published(s3, s3_bucket) == ["weights/step-100", "weights/step-2"]
    assert records(s3, s3_bucket) == []


def test_a_folder_listing_that_cannot_stand_for_its_checkpoints_has_each_listed_alone(
    s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder holding more than `FOLDER_OBJECTS` (and from then on, for every batch), or
    whose listing names a key outside it: each checkpoint is listed on its own, and only its
    own keys are deleted."""
    monkeypatch.setattr(deleting, "FOLDER_OBJECTS", 5)
    keys = [*shards(1), *shards(2), *shards(3)]
    seeded(s3, s3_bucket, keys)
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as endpoint:
        place = bucket_place(endpoint, s3_bucket)
        engine = BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER)
        assert all(outcome(r).done for r in engine.delete_batch(asks(1, 2)))
        assert all(outcome(r).done for r in engine.delete_batch(asks(3, 100)))
    assert sorted(faults.listed()) == sorted(
        ["store/run/"]  # crowded: not listed for the second batch
        + [f"store/run/step-{step}/" for step in (1, 2, 1, 2, 3, 100, 3, 100)]
    )
    assert [k for k in s3.keys(s3_bucket) if ".ckpt-tui" not in k] == sorted(NEIGHBOURS[1:])

    monkeypatch.setattr(deleting, "FOLDER_OBJECTS", 5000)
    again = [*shards(4), *shards(5)]
    for key in again:
        s3.put(s3_bucket, key, b"weights")
    hostile = S3Faults(s3.endpoint)
    hostile.extra_listed_key = "store/elsewhere/step-4/x"
    hostile.extra_listed_for = "store/run/"
    with run_server(hostile) as endpoint:
        engine = BucketDeleter(bucket_place(endpoint, s3_bucket), clock=LATER)
        results = [outcome(r) for r in engine.delete_batch(asks(4, 5))]
    assert [sorted(o.deleted) for o in results] == [shards(4), shards(5)]
    first, *then = hostile.listed()
    assert first == "store/run/"  # refused: from then on each checkpoint alone, side by side
    assert sorted(then) == ["store/run/step-4/"] * 2 + ["store/run/step-5/"] * 2
    assert [k for k in s3.keys(s3_bucket) if ".ckpt-tui" not in k] == sorted(NEIGHBOURS[1:])


def test_a_batch_record_with_one_bad_checkpoint_is_reported_and_not_acted_on(
    s3: S3Server, s3_bucket: str
) -> None:
    """Recovery reads batch records as it reads a single checkpoint's: one naming a key
    outside its checkpoint, or too many checkpoints, is left whole (nothing of it deleted)."""
    seeded(s3, s3_bucket, [*shards(1), *shards(2)])
    good = DeleteIntent("run/step-1", "run", "weights/step-1", shards(1), 0)
    hostile = DeleteIntent("run/step-2", "run", "weights/step-2", [NEIGHBOURS[0]], 0)
    folder = f"store/.ckpt-tui/{DELETES}"
    s3.put(s3_bucket, f"{folder}/a.json", msgspec.json.encode(BatchIntent([good, hostile])))
    many = BatchIntent([good] * (MAX_INTENT_CHECKPOINTS + 1))
    s3.put(s3_bucket, f"{folder}/b.json", msgspec.json.encode(many))
    place = bucket_place(s3.endpoint, s3_bucket)
    recovery = BucketDeleter(place, clock=LATER).recover()
    assert recovery.finished == []
    assert len(recovery.problems) == 2
    assert "a.json was not acted on" in recovery.problems[0]
    assert "outside it" in recovery.problems[0]
    assert "names 1,001 checkpoints" in recovery.problems[1]
    assert s3.keys(s3_bucket, "store/run/step-1/") == shards(1)
    assert len(records(s3, s3_bucket)) == 2


def test_a_batch_record_naming_a_path_that_now_holds_a_run_is_left_whole(
    s3: S3Server, s3_bucket: str
) -> None:
    """Recovery runs the walk over each checkpoint of a batch's record: one whose path now
    holds checkpoints of its own (weight files with no config: each is one) makes the whole
    record not acted on, the other checkpoint's objects too."""
    loose_weights = [f"store/run/step-2/{name}.safetensors" for name in ("a", "b")]
    seeded(s3, s3_bucket, [*shards(1), *loose_weights])
    batch = BatchIntent(
        [
            DeleteIntent("run/step-1", "run", "weights/step-1", shards(1), 2**62),
            DeleteIntent("run/step-2", "run", "weights/step-2", loose_weights, 2**62),
        ]
    )
    s3.put(s3_bucket, f"store/.ckpt-tui/{DELETES}/a.json", msgspec.json.encode(batch))
    place = bucket_place(s3.endpoint, s3_bucket)
    recovery = BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER).recover()
    assert recovery.finished == []
    (problem,) = recovery.problems
    assert "a.json was not acted on: run/step-2: it holds other checkpoints" in problem
    assert s3.keys(s3_bucket, "store/run/step-1/") == shards(1)
    assert s3.keys(s3_bucket, "store/run/step-2/") == loose_weights
    assert published(s3, s3_bucket) == [f"weights/step-{step}" for step in (1, 100, 2, 3)]
    assert len(records(s3, s3_bucket)) == 1


def test_a_batch_deletes_every_weight_file_before_any_config(s3: S3Server, s3_bucket: str) -> None:
    """Weight files first across the whole batch: whatever request a crash stops after, each
    checkpoint left is still one checkpoint (its config is there) or has no weights left."""
    seeded(s3, s3_bucket, [*shards(1), *shards(2)])
    place = bucket_place(s3.endpoint, s3_bucket)
    engine = BucketDeleter(place, BucketMeta(place, False, 0), clock=LATER, batch_keys=2)
    left_after: list[list[str]] = []

    def look(step: str) -> None:
        if step == "batch":
            keys = s3.keys(s3_bucket, "store/run/step-")
            left_after.append([key for key in keys if key not in NEIGHBOURS])

    engine.step_hook = look
    assert all(outcome(r).done for r in engine.delete_batch(asks(1, 2)))
    configs = ["store/run/step-1/config.json", "store/run/step-2/config.json"]
    assert left_after == [
        [*configs[:1], *shards(2)[:2], configs[1]],
        configs,
        [],
    ]
