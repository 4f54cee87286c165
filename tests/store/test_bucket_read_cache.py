"""The local cache of a bucket's file starts (`store/bucket/read_cache.py`), against a real S3
server (moto): a second open reads no object that did not change, a replaced object (a new
ETag) is read again, and a damaged or foreign cache file is ignored (everything is read from
the bucket, as on a first open). Nothing of it is written to the bucket."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest

from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.store.bucket.read_cache import CACHE_VERSION, CachedRead, CacheFile, ReadCache
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.bucket_tap import TappedBucket
from tests.support.s3_server import S3Server

STATE = "p/out/checkpoint-200/trainer_state.json"


def opened(url: str, clock: FixedClock) -> tuple[TappedBucket, dict[str, dict[str, str]]]:
    """A new process's open of `url`: (its tapped bucket, path -> metadata of each checkpoint)."""
    bucket = TappedBucket.at(url)
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        checkpoints, _ = store.list_checkpoints(0, 1000)
    return bucket, {c.tinker_path: dict(c.user_metadata or {}) for c in checkpoints}


@pytest.fixture
def trainer_bucket(tmp_path: Path, s3: S3Server, s3_bucket: str) -> str:
    L.hf_trainer_output(tmp_path / "out", steps=(100, 200))
    s3.upload(s3_bucket, "p", tmp_path)
    return f"s3://{s3_bucket}/p"


def test_a_second_open_reads_no_object_and_writes_nothing_to_the_bucket(
    trainer_bucket: str, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    keys = s3.keys(s3_bucket)
    cold, first = opened(trainer_bucket, clock)
    assert cold.reads and len(first) == 2
    warm, second = opened(trainer_bucket, clock)
    assert warm.reads == [] and second == first
    assert s3.keys(s3_bucket) == keys


def test_a_replaced_object_is_read_again(
    trainer_bucket: str, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    _, first = opened(trainer_bucket, clock)
    state = json.loads(s3.client.get_object(Bucket=s3_bucket, Key=STATE)["Body"].read())
    state["log_history"][-1]["eval_loss"] = 0.25
    s3.put(s3_bucket, STATE, json.dumps(state).encode())
    again, second = opened(trainer_bucket, clock)
    assert {key for key, _, _ in again.reads} == {STATE}
    assert second != first  # what the new trainer_state.json says, not the cached one


def test_the_open_after_a_change_reads_nothing_again(
    trainer_bucket: str, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    opened(trainer_bucket, clock)
    s3.put(s3_bucket, STATE, b'{"global_step": 200, "log_history": []}')
    opened(trainer_bucket, clock)
    warm, _ = opened(trainer_bucket, clock)
    assert warm.reads == []


def damaged(path: Path, scope: str) -> list[bytes]:
    """Cache files that must be ignored: cut short, garbage, another version, another
    bucket's, and entries of the right ETag whose bytes are not the length read."""
    good = path.read_bytes()
    kept = msgspec.msgpack.decode(good, type=CacheFile)
    wrong_length = [CachedRead(r.key, r.tag, r.size, r.data[:-1]) for r in kept.reads]
    return [
        good[: len(good) // 2],
        os.urandom(4096),
        msgspec.msgpack.encode(CacheFile(CACHE_VERSION + 1, scope, kept.reads)),
        msgspec.msgpack.encode(CacheFile(CACHE_VERSION, "s3://other/p", kept.reads)),
        msgspec.msgpack.encode(CacheFile(CACHE_VERSION, scope, wrong_length)),
        b"\x93" + good[1:],
    ]


def test_a_damaged_cache_file_is_ignored_and_replaced(
    trainer_bucket: str, clock: FixedClock
) -> None:
    cold, first = opened(trainer_bucket, clock)
    cache = ReadCache(str(cold.cache_scope))
    for bad in damaged(cache.path, cache.scope):
        cache.path.write_bytes(bad)
        again, found = opened(trainer_bucket, clock)
        assert found == first
        assert sorted(again.reads) == sorted(cold.reads)  # read from the bucket again
        assert opened(trainer_bucket, clock)[0].reads == []  # and the cache saved again


def test_a_cache_file_that_is_a_link_is_not_followed(
    trainer_bucket: str, clock: FixedClock, tmp_path: Path
) -> None:
    cold, first = opened(trainer_bucket, clock)
    cache = ReadCache(str(cold.cache_scope))
    elsewhere = tmp_path / "elsewhere"
    cache.path.rename(elsewhere)
    cache.path.symlink_to(elsewhere)
    again, found = opened(trainer_bucket, clock)
    assert found == first and sorted(again.reads) == sorted(cold.reads)


def test_a_cache_folder_that_cannot_be_written_changes_nothing(
    trainer_bucket: str, clock: FixedClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # a file: no folder can be made in it
    cold, first = opened(trainer_bucket, clock)
    again, second = opened(trainer_bucket, clock)
    assert second == first and sorted(again.reads) == sorted(cold.reads)
