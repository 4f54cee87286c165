"""The local cache of a bucket's file starts and of what the walk found in them
(`store/bucket/read_cache.py`), against a real S3 server (moto): a second open reads no
object and examines no checkpoint that did not change, a replaced object (a new ETag) is read
and its checkpoint examined again, and a damaged or foreign cache file, or a finding in it
that does not decode, is ignored (read from the bucket, as on a first open). Nothing of it is
written to the bucket. And the app's open (`first_look_behind`): it returns before the bucket
is read, and reads wait for that look."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store import scan
from ckpt_tui.store.blobs.base import StorageReadError
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.store.bucket.read_cache import (
    CACHE_VERSION,
    CachedFinding,
    CachedRead,
    CacheFile,
    ReadCache,
)
from ckpt_tui.store.discover import hf_trainer
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.bucket_tap import TappedBucket
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server

STATE = "p/out/checkpoint-200/trainer_state.json"


def opened(url: str, clock: FixedClock) -> tuple[TappedBucket, dict[str, dict[str, str]]]:
    """A new process's open of `url`: (its tapped bucket, path -> metadata of each checkpoint)."""
    bucket = TappedBucket.at(url)
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        checkpoints, _ = store.list_checkpoints(0, 1000)
    return bucket, {c.tinker_path: dict(c.user_metadata or {}) for c in checkpoints}


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


@pytest.fixture
def examined(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The checkpoints whose files the walk examines (Trainer saves, Tinker checkpoints'
    weights), in the order it does."""
    paths: list[str] = []
    trainer, tinker = hf_trainer.examine, scan._still_written

    def examine_trainer(path: str, *args: Any) -> Any:
        paths.append(path)
        return trainer(path, *args)

    def examine_tinker(path: str, *args: Any) -> Any:
        paths.append(path)
        return tinker(path, *args)

    monkeypatch.setattr(hf_trainer, "examine", examine_trainer)
    monkeypatch.setattr(scan, "_still_written", examine_tinker)
    return paths


@pytest.fixture
def mixed_bucket(tmp_path: Path, s3: S3Server, s3_bucket: str) -> str:
    """Two Trainer saves and two Tinker checkpoints under the prefix `p`; its location."""
    L.hf_trainer_output(tmp_path / "out", steps=(100, 200))
    for n in ("000010", "000020"):
        L.peft_adapter(tmp_path / "runs" / "run-1" / "weights" / n)
    s3.upload(s3_bucket, "p", tmp_path)
    return f"s3://{s3_bucket}/p"


def test_a_second_open_examines_only_the_checkpoint_whose_objects_changed(
    mixed_bucket: str,
    clock: FixedClock,
    s3: S3Server,
    s3_bucket: str,
    examined: list[str],
    tmp_path: Path,
) -> None:
    _, first = opened(mixed_bucket, clock)
    assert len(first) == 4 and len(examined) == 4
    examined.clear()
    warm, second = opened(mixed_bucket, clock)
    assert examined == [] and warm.reads == [] and second == first
    state = json.loads(s3.client.get_object(Bucket=s3_bucket, Key=STATE)["Body"].read())
    s3.put(s3_bucket, STATE, json.dumps({**state, "global_step": 201}).encode())
    other = L.safetensors_file(tmp_path / "other.safetensors", {"b": ("F16", [8, 4])})
    s3.put(s3_bucket, "p/runs/run-1/weights/000020/adapter_model.safetensors", other.read_bytes())
    opened(mixed_bucket, clock)
    assert sorted(path.rsplit("/", 2)[-1] for path in examined) == ["000020", "checkpoint-200"]


def rewrite_findings(
    bucket: TappedBucket, change: Callable[[list[CachedFinding]], list[CachedFinding]]
) -> None:
    """Replace the findings in `bucket`'s cache file by `change(the findings)`."""
    cache = ReadCache(str(bucket.cache_scope))
    kept = msgspec.msgpack.decode(cache.path.read_bytes(), type=CacheFile)
    found = change(kept.found)
    raw = msgspec.msgpack.encode(CacheFile(CACHE_VERSION, cache.scope, kept.reads, found))
    cache.path.write_bytes(raw)


def undecodable(found: list[CachedFinding]) -> list[CachedFinding]:
    garbage = [CachedFinding(f.path, f.key, b"{not json") for f in found[:2]]
    return garbage + [CachedFinding(f.path, f.key, b'["a", 1, 2]') for f in found[2:]]


def swapped(found: list[CachedFinding]) -> list[CachedFinding]:
    """checkpoint-100's and -200's findings swapped, each under the other's key."""
    a, b = [f for f in found if f.key.startswith("hf_trainer:")]
    rest = [f for f in found if f not in (a, b)]
    return [CachedFinding(a.path, a.key, b.finding), CachedFinding(b.path, b.key, a.finding), *rest]


@pytest.mark.parametrize(("change", "examined_again"), [(undecodable, 4), (swapped, 2)])
def test_kept_findings_that_do_not_decode_or_name_another_checkpoint_are_examined_again(
    mixed_bucket: str,
    clock: FixedClock,
    examined: list[str],
    change: Callable[[list[CachedFinding]], list[CachedFinding]],
    examined_again: int,
) -> None:
    cold, first = opened(mixed_bucket, clock)
    rewrite_findings(cold, change)
    examined.clear()
    again, found = opened(mixed_bucket, clock)
    assert found == first and again.reads == [] and len(examined) == examined_again
    examined.clear()
    opened(mixed_bucket, clock)
    assert examined == []  # and kept again as they were found


def test_a_later_look_in_the_same_process_keeps_every_finding(
    mixed_bucket: str, clock: FixedClock, s3: S3Server, s3_bucket: str, examined: list[str]
) -> None:
    bucket = TappedBucket.at(mixed_bucket)
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        store.list_checkpoints(0, 1000)
        s3.put(s3_bucket, STATE, b'{"global_step": 200, "log_history": []}')
        examined.clear()
        store.rescan()  # a look that walks: an object changed
        assert [path.rsplit("/", 1)[-1] for path in examined] == ["checkpoint-200"]
    examined.clear()
    warm, _ = opened(mixed_bucket, clock)
    assert examined == [] and warm.reads == []  # the Tinker ones too, though not recalled


def test_a_warm_open_reads_no_loose_file_and_no_deepspeed_tag_again(
    tmp_path: Path, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    L.full_torch_checkpoint(tmp_path / "exp" / "model.pt")
    L.deepspeed_run(tmp_path / "ds", steps=(100, 200), latest=100)
    s3.upload(s3_bucket, "p", tmp_path)
    url = f"s3://{s3_bucket}/p"
    cold, first = opened(url, clock)
    read = {key for key, _, _ in cold.reads}
    assert {"p/exp/model.pt", "p/ds/latest"} <= read
    warm, second = opened(url, clock)
    assert warm.reads == [] and second == first
    s3.put(s3_bucket, "p/ds/latest", b"global_step200")
    again, third = opened(url, clock)
    reread = {key for key, _, _ in again.reads}  # the tag, and the saves it judges
    assert "p/ds/latest" in reread and "p/exp/model.pt" not in reread
    assert third != first  # global_step200 is no longer newer than the tag


def test_a_truncated_tinker_checkpoint_stays_incomplete_when_recalled(
    tmp_path: Path, clock: FixedClock, s3: S3Server, s3_bucket: str, examined: list[str]
) -> None:
    folder = L.peft_adapter(tmp_path / "runs" / "run-1" / "weights" / "000010")
    weights = folder / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8])
    s3.upload(s3_bucket, "p", tmp_path)
    url = f"s3://{s3_bucket}/p"
    _, first = opened(url, clock)
    assert "truncated" in first["tinker://run-1/weights/000010"]["incomplete_reason"]
    examined.clear()
    _, second = opened(url, clock)
    assert examined == [] and second == first


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


def test_a_save_removes_what_a_killed_save_left_and_nothing_else(
    trainer_bucket: str, clock: FixedClock, tmp_path: Path
) -> None:
    """A process killed while saving leaves its `.saving-` file (up to 256 MiB); the next
    save removes it once it is an hour old: not a younger one (another process may be
    saving), not a link (nor what it points to), not another file."""
    cold, _ = opened(trainer_bucket, clock)
    cache = ReadCache(str(cold.cache_scope))
    folder = cache.path.parent
    hours_ago = time.time() - 2 * 3600
    left, saving, other = folder / ".saving-left", folder / ".saving-now", folder / "other"
    for path in (left, saving, other):
        path.write_bytes(b"x" * 1000)
    target = tmp_path / "target"
    target.write_bytes(b"mine")
    link = folder / ".saving-link"
    link.symlink_to(target)
    for path in (left, other, link):
        os.utime(path, (hours_ago, hours_ago), follow_symlinks=False)
    cache.path.write_bytes(b"garbage")  # so that the next open saves
    opened(trainer_bucket, clock)
    assert not left.exists()
    assert saving.exists() and other.exists() and link.is_symlink()
    assert target.read_bytes() == b"mine"
    assert opened(trainer_bucket, clock)[0].reads == []  # the save itself was kept


def test_a_cache_folder_that_cannot_be_written_changes_nothing(
    trainer_bucket: str, clock: FixedClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_bytes(b"")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # a file: no folder can be made in it
    cold, first = opened(trainer_bucket, clock)
    again, second = opened(trainer_bucket, clock)
    assert second == first and sorted(again.reads) == sorted(cold.reads)


def test_an_open_with_the_look_behind_returns_before_the_listing_and_reads_wait_for_it(
    trainer_bucket: str, clock: FixedClock
) -> None:
    bucket = TappedBucket.at(trainer_bucket)
    bucket.listing_gate = threading.Event()
    with ThreadPoolExecutor(1) as opener:
        opening = opener.submit(
            BucketStore.open_bucket, bucket, clock, settle_seconds=0, first_look_behind=True
        )
        store = opening.result(timeout=120)  # returned while the listing cannot go on
    with store:
        threading.Timer(0.5, bucket.listing_gate.set).start()
        checkpoints, total = store.list_checkpoints(0, 100)  # waits for the first look
        assert total == 2 and len(checkpoints) == 2
        assert store.problems().complete


def test_a_first_look_behind_that_cannot_list_is_a_problem_not_an_empty_bucket(
    trainer_bucket: str, clock: FixedClock
) -> None:
    bucket = TappedBucket.at(trainer_bucket)
    bucket.failing_listing = True
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0, first_look_behind=True) as store:
        assert store.list_checkpoints(0, 100)[1] == 0
        problems = store.problems()
    assert not problems.complete and "503" in problems.lines[0]


def test_prefixes_listed_side_by_side_list_every_object_once(
    clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    keys = [f"p/top-{i}.json" for i in range(3)]
    keys += [f"p/runs/run-{r:02d}/weights/{n:04d}/a.bin" for r in range(20) for n in range(3)]
    keys += [f"p/runs/run-{r:02d}/run.json" for r in range(20)] + ["p/runs/loose.pt"]
    keys += [f"p/big/part-{i:04d}.bin" for i in range(1005)]  # one prefix of two pages
    for key in keys:
        s3.put(s3_bucket, key, b"x")
    s3.put(s3_bucket, "p-other/not-mine.bin", b"x")  # beside the prefix, not under it
    bucket = TappedBucket.at(f"s3://{s3_bucket}/p")
    listed = [key for key, _ in bucket.list_all()]
    assert sorted(listed) == sorted(keys)


def test_a_prefix_whose_listing_is_refused_fails_the_whole_listing(
    clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    for key in ("p/a/x.bin", "p/runs/r/run.json", "p/runs/r/weights/1/a.bin", "p/b/y.bin"):
        s3.put(s3_bucket, key, b"x")
    faults = S3Faults(s3.endpoint)
    faults.refuse_listing = "runs%2Fr%2F"  # only the listing of p/runs/r/
    with run_server(faults) as endpoint:
        location = parse_location(f"s3://{s3_bucket}/p", endpoint=endpoint)
        assert location is not None
        storage = ObjectStorage.open(location)
        with pytest.raises(StorageReadError, match="403"):
            list(storage.list_all())
        with BucketStore.open_bucket(storage, clock, settle_seconds=0) as store:
            problems = store.problems()
        assert not problems.complete and "403" in problems.lines[0]


@pytest.mark.parametrize(("kept", "read"), [(12, 12), (None, None), (-1, None), (2**62, None)])
def test_the_count_a_look_listed_is_kept_and_a_count_out_of_bounds_is_none(
    tmp_path: Path, kept: int | None, read: int | None
) -> None:
    """The count only decides how the next look lists (flat under a page, else side by
    side): a file that says anything else is taken as saying nothing."""
    ReadCache("scope", tmp_path).save({}, {}, {}, kept)
    assert ReadCache("scope", tmp_path).listed_before == read
