"""The requests a bucket store waits for one after another: its open reads the store's two
documents, looks for interrupted deletes and lists the prefix side by side; a look reads the
shared metadata again only when its listing shows another version of it; a prefix the last
look found small is listed in one request (real S3 server, moto)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from ckpt_tui.locations import parse_location
from ckpt_tui.store import Store
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server
from tests.support.waiting import until

HANG_GUARD = 60.0
"""Seconds a test waits at most for what must come (a guard, not a timing)."""


def store_id_read(method: str, path: str, query: str) -> bool:
    return method == "GET" and path.endswith("/.ckpt-tui/store.json")


def deletes_listed(faults: S3Faults) -> bool:
    return any("ckpt-tui%2Fdeletes" in prefix for prefix in _queries(faults))


def _queries(faults: S3Faults) -> list[str]:
    return [query for method, _, query in faults.requests if "list-type=2" in query]


def meta_reads(faults: S3Faults) -> int:
    return sum(1 for _, path, _ in faults.requests if path.endswith("/.ckpt-tui/meta.json"))


def opened(location: str, endpoint: str, clock: FixedClock) -> BucketStore:
    parsed = parse_location(location, endpoint)
    assert parsed is not None
    return BucketStore.open_bucket(ObjectStorage.open(parsed), clock, settle_seconds=0)


def public(store: Store) -> list[str]:
    checkpoints, _ = store.list_checkpoints(0, 1000)
    return sorted(c.tinker_path for c in checkpoints if c.public)


async def test_the_open_lists_the_prefix_and_the_delete_records_while_it_reads_the_store_id(
    trainer_bucket: str, s3: S3Server, clock: FixedClock
) -> None:
    """The store id's answer is held: the delete records and the prefix are listed all the
    same (one round trip of every open, not three), and the open then ends as before."""
    faults = S3Faults(s3.endpoint)
    faults.hold_answers = gate = threading.Event()
    faults.hold_answers_to = store_id_read
    with run_server(faults) as endpoint:
        opening = asyncio.create_task(asyncio.to_thread(opened, trainer_bucket, endpoint, clock))
        try:
            await until(faults.answer_held.is_set)
            await until(lambda: deletes_listed(faults) and bool(listings(faults)))
        finally:
            gate.set()
        with await asyncio.wait_for(opening, HANG_GUARD) as store:
            assert len(store.list_checkpoints(0, 1000)[0]) == 2
            assert store.problems().complete


def test_a_look_reads_the_metadata_only_when_the_listing_shows_another_version(
    trainer_bucket: str, tmp_path: Path, s3: S3Server, s3_bucket: str, clock: FixedClock
) -> None:
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as endpoint:
        with opened(trainer_bucket, endpoint, clock) as writer:
            first, _ = writer.list_checkpoints(0, 1000)
            writer.set_public(first[0].run_id, first[0].checkpoint_id, True)
        faults.requests.clear()
        with opened(trainer_bucket, endpoint, clock) as store:
            assert meta_reads(faults) == 1  # the open's; the first look's listing agreed
            assert public(store) == [first[0].tinker_path]
            # A new checkpoint, the metadata as it was: the look reads no metadata.
            L.hf_trainer_output(tmp_path / "out", steps=(300,))
            s3.upload(
                s3_bucket, "p/out", tmp_path / "out", skip=("checkpoint-100", "checkpoint-200")
            )
            store.rescan()
            assert len(store.list_checkpoints(0, 1000)[0]) == 3
            assert meta_reads(faults) == 1
            # Another writer's change: the listing shows a new version, which is read.
            with opened(trainer_bucket, endpoint, clock) as other:
                other.set_public(first[1].run_id, first[1].checkpoint_id, True)
            reads = meta_reads(faults)
            store.rescan()
            assert meta_reads(faults) == reads + 1
            assert public(store) == sorted(c.tinker_path for c in first)


def listings(faults: S3Faults) -> list[str]:
    """The query of each ListObjectsV2 request, leaving out the delete records' listing."""
    return [query for query in _queries(faults) if "ckpt-tui%2Fdeletes" not in query]


def test_a_bucket_the_last_look_found_small_is_listed_in_one_request(
    trainer_bucket: str, s3: S3Server, clock: FixedClock
) -> None:
    """What the last look listed is kept on this machine (the read cache): under one page of
    objects, the next open lists the prefix flat in one request, and lists the same."""
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as endpoint:
        with opened(trainer_bucket, endpoint, clock) as first:
            before, _ = first.list_checkpoints(0, 1000)
        assert len(listings(faults)) > 1  # nothing kept yet: the levels first
        faults.requests.clear()
        with opened(trainer_bucket, endpoint, clock) as again:
            after, _ = again.list_checkpoints(0, 1000)
    [flat] = listings(faults)
    assert "delimiter" not in flat and "prefix=p%2F" in flat
    assert after == before and len(after) == 2


def test_metadata_another_writer_makes_first_is_read_and_shown(
    trainer_bucket: str, s3: S3Server, clock: FixedClock
) -> None:
    """The bucket holds no metadata document when the store opens (its version: none); a
    look whose listing then shows one reads it."""
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as endpoint, opened(trainer_bucket, endpoint, clock) as store:
        checkpoints, _ = store.list_checkpoints(0, 1000)
        assert public(store) == [] and meta_reads(faults) == 1
        with opened(trainer_bucket, endpoint, clock) as other:
            other.set_public(checkpoints[0].run_id, checkpoints[0].checkpoint_id, True)
        store.rescan()
        assert public(store) == [checkpoints[0].tinker_path]
