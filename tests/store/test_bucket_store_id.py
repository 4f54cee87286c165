"""The store id of a bucket that keeps none yet follows what its listing finds, so two opens
of one bucket agree; the first change keeps it, and an open made earlier takes the kept one at
its next look. Against a real S3 server (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support import layouts as L
from tests.support.bucket_places import bucket_place
from tests.support.s3_server import S3Server

PREFIX = "cluster"
LATER = FixedClock(SystemClock().now() + timedelta(days=1))
"""A clock past the settle time of every save the tests make."""


@pytest.fixture
def two_opens(tmp_path: Path, s3: S3Server, s3_bucket: str) -> Iterator[tuple[BucketStore, ...]]:
    """Two Trainer saves in a bucket that keeps no store id, opened twice (two processes)."""
    L.hf_trainer_output(tmp_path / "synced/qwen-sft", steps=(100, 200))
    s3.upload(s3_bucket, PREFIX, tmp_path / "synced")
    location = parse_location(f"s3://{s3_bucket}/{PREFIX}", s3.endpoint, "us-east-1")
    assert location is not None
    opens = tuple(
        BucketStore.open_bucket(ObjectStorage.open(location), LATER, settle_seconds=0)
        for _ in range(2)
    )
    yield opens
    for store in opens:
        store.close()


def kept_id(s3: S3Server, bucket: str) -> str | None:
    return BucketMeta(bucket_place(s3.endpoint, bucket, PREFIX), True, 0).store_id


def test_a_delete_keeps_the_id_both_opens_reported(
    two_opens: tuple[BucketStore, BucketStore], s3: S3Server, s3_bucket: str
) -> None:
    a, b = two_opens
    reported = a.store_id
    assert b.store_id == reported and kept_id(s3, s3_bucket) is None  # looking kept nothing
    # the first checkpoint by key: its objects are the first the listing finds
    a.delete_checkpoint("qwen-sft", "weights/checkpoint-100")
    assert kept_id(s3, s3_bucket) == reported
    b.rescan()
    assert a.store_id == b.store_id == reported


def test_an_open_made_before_an_id_was_kept_takes_it_at_its_next_look(
    two_opens: tuple[BucketStore, BucketStore], s3: S3Server, s3_bucket: str
) -> None:
    a, _b = two_opens
    other = BucketMeta(bucket_place(s3.endpoint, s3_bucket, PREFIX), False, 0, "kept-elsewhere")
    assert other.ensure_store_id() == "kept-elsewhere"
    a.rescan()
    assert a.store_id == "kept-elsewhere"
