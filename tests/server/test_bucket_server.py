"""Publish, TTL and delete through the REST API on a bucket store (routes unchanged), the
expiry sweep, --readonly, and prune with keep policies, against a real S3 server (moto)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from ckpt_tui.cli import main
from ckpt_tui.locations import parse_location
from ckpt_tui.server import create_app
from ckpt_tui.server.deletes import DeleteQueue
from ckpt_tui.store import Store
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support import layouts as L
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server
from tests.support.waiting import until

API = "/api/v1/training_runs/trainer/checkpoints"
C100, C200, C300 = (f"weights/checkpoint-{step}" for step in (100, 200, 300))


@pytest.fixture
def later() -> FixedClock:
    """A day after now: every object the test wrote has settled."""
    return FixedClock(SystemClock().now() + timedelta(days=1))


@pytest.fixture
def box(tmp_path: Path, s3: S3Server, s3_bucket: str) -> str:
    """A Trainer output with three saves synced to s3://BUCKET/p; its location."""
    L.hf_trainer_output(tmp_path / "box/trainer", steps=(100, 200, 300), best=300)
    s3.upload(s3_bucket, "p", tmp_path / "box")
    return f"s3://{s3_bucket}/p"


def opened(location: str, clock: FixedClock, readonly: bool = False) -> BucketStore:
    parsed = parse_location(location)
    assert parsed is not None
    storage = ObjectStorage.open(parsed)
    return BucketStore.open_bucket(storage, clock, settle_seconds=0, readonly=readonly)


@pytest.fixture
def served(box: str, later: FixedClock) -> Iterator[tuple[str, BucketStore]]:
    store = opened(box, later)
    with store, run_server(create_app(store, sweep_interval=None)) as url:
        yield url, store


def listed(location: str, clock: FixedClock) -> dict[str, tuple[bool, object]]:
    """checkpoint id -> (public, expires_at) as a fresh opener of the bucket sees them."""
    with opened(location, clock, readonly=True) as store:
        found = store.list_checkpoints(0, 100)[0]
    return {c.checkpoint_id: (c.public, c.expires_at) for c in found}


def objects(s3: S3Server, bucket: str, step: int) -> list[str]:
    return s3.keys(bucket, f"p/trainer/checkpoint-{step}/")


def test_publish_ttl_and_delete_through_the_api_are_kept_in_the_bucket(
    served: tuple[str, BucketStore], box: str, later: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    url, _store = served
    health = httpx.get(f"{url}/api/v1/healthz").json()  # before the bucket keeps an id
    assert httpx.post(f"{url}{API}/{C100}/publish").status_code == 204
    assert httpx.put(f"{url}{API}/{C200}/ttl", json={"ttl_seconds": 7200}).status_code == 204
    assert httpx.delete(f"{url}{API}/{C300}").status_code == 204

    seen = listed(box, later)  # another opener of the bucket
    assert sorted(seen) == [C100, C200]
    assert seen[C100] == (True, None)
    assert seen[C200][1] == later.now() + timedelta(seconds=7200)
    assert objects(s3, s3_bucket, 300) == []
    assert len(objects(s3, s3_bucket, 100)) == len(objects(s3, s3_bucket, 200)) > 0
    assert s3.keys(s3_bucket, "p/.ckpt-tui/deletes/") == []
    stored = json.loads(
        s3.client.get_object(Bucket=s3_bucket, Key="p/.ckpt-tui/store.json")["Body"].read()
    )
    assert health["store_id"] == stored["store_id"]  # the id it reported before writing
    assert httpx.get(f"{url}/api/v1/healthz").json() == health


def test_a_conflict_and_a_missing_checkpoint_answer_as_on_disk(
    served: tuple[str, BucketStore], s3: S3Server, s3_bucket: str
) -> None:
    url, _store = served
    assert httpx.post(f"{url}{API}/{C100}/publish").status_code == 204
    again = httpx.post(f"{url}{API}/{C100}/publish")
    assert again.status_code == 409 and "already public" in again.json()["detail"]
    assert httpx.delete(f"{url}{API}/weights/checkpoint-999").status_code == 404
    assert len(s3.keys(s3_bucket, "p/trainer/")) > 0


def test_a_readonly_bucket_store_refuses_every_change_and_writes_nothing(
    box: str, later: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    before = s3.keys(s3_bucket)
    with (
        opened(box, later, readonly=True) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        answers = [
            httpx.post(f"{url}{API}/{C100}/publish"),
            httpx.put(f"{url}{API}/{C200}/ttl", json={"ttl_seconds": 7200}),
            httpx.delete(f"{url}{API}/{C300}"),
        ]
    assert [a.status_code for a in answers] == [403, 403, 403]
    assert all("read-only" in a.json()["detail"] for a in answers)
    assert s3.keys(s3_bucket) == before


def test_a_checkpoint_still_being_written_is_refused(
    tmp_path: Path, s3: S3Server, s3_bucket: str, later: FixedClock
) -> None:
    L.dcp_checkpoint(tmp_path / "box/dcp/step-20", with_metadata=False)
    s3.upload(s3_bucket, "p", tmp_path / "box")
    before = s3.keys(s3_bucket)
    with (
        opened(f"s3://{s3_bucket}/p", later) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        (checkpoint,) = store.list_checkpoints(0, 10)[0]
        run_id = checkpoint.tinker_path.split("/")[2]
        answer = httpx.delete(
            f"{url}/api/v1/training_runs/{run_id}/checkpoints/{checkpoint.checkpoint_id}"
        )
    assert answer.status_code == 409
    assert "refusing to delete" in answer.json()["detail"]
    assert ".metadata" in answer.json()["detail"]
    assert s3.keys(s3_bucket) == before


def test_objects_newer_than_the_settle_time_are_refused(
    box: str, s3: S3Server, s3_bucket: str
) -> None:
    before = s3.keys(s3_bucket)
    parsed = parse_location(box)
    assert parsed is not None
    storage = ObjectStorage.open(parsed)
    with (
        BucketStore.open_bucket(storage, SystemClock(), settle_seconds=3600) as store,
        run_server(create_app(store, sweep_interval=None)) as url,
    ):
        answer = httpx.delete(f"{url}{API}/{C300}")
    assert answer.status_code == 409
    assert "still being written" in answer.json()["detail"]
    assert s3.keys(s3_bucket) == before


def test_the_sweep_deletes_an_expired_checkpoint_from_the_bucket(
    served: tuple[str, BucketStore], box: str, later: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    url, store = served
    assert httpx.put(f"{url}{API}/{C200}/ttl", json={"ttl_seconds": 3600}).status_code == 204
    assert store.sweep_expired() == []
    later.advance(timedelta(seconds=3601))
    assert store.sweep_expired() == [f"tinker://trainer/{C200}"]
    assert objects(s3, s3_bucket, 200) == []
    assert len(objects(s3, s3_bucket, 100)) > 0 and len(objects(s3, s3_bucket, 300)) > 0
    assert sorted(listed(box, later)) == [C100, C300]


@pytest.mark.usefixtures("quiet_environment")
def test_prune_keep_last_over_a_bucket_keeps_the_published_and_the_newest(
    served: tuple[str, BucketStore], box: str, later: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    url, _store = served
    assert httpx.post(f"{url}{API}/{C100}/publish").status_code == 204
    assert main(["prune", "--url", url, "--keep-last", "1", "--yes"]) == 0
    assert sorted(listed(box, later)) == [C100, C300]
    assert objects(s3, s3_bucket, 200) == []
    assert len(objects(s3, s3_bucket, 100)) > 0 and len(objects(s3, s3_bucket, 300)) > 0


def test_serve_readonly_of_a_bucket_refuses_changes(
    box: str, s3: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    """`serve --readonly s3://…` answers 403; without it the same call reaches the store
    (409: the objects were just written, so they are still settling)."""
    env = {**os.environ, **s3.environment()}
    codes = {}
    for flags in (["--readonly"], []):
        command = [sys.executable, "-m", "ckpt_tui", "serve", box, "--port", "0", *flags]
        with subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
        ) as server:
            try:
                assert server.stdout is not None
                line = server.stdout.readline()
                url = line.split("serving ", 1)[1].split(" ", 1)[0]
                codes[bool(flags)] = httpx.post(
                    f"{url}{API}/{C100}/publish", timeout=30
                ).status_code
            finally:
                server.terminate()
                server.wait(timeout=30)
    assert codes == {True: 403, False: 409}


def test_deletes_wait_on_the_bucket_side_by_side_and_one_checkpoint_once(
    served: tuple[str, BucketStore], s3: S3Server, s3_bucket: str
) -> None:
    """While one delete waits on the bucket (its intent written), the store answers: a list,
    a delete of another checkpoint (done), and a second delete of the same one (409)."""
    url, store = served
    during: list[int] = []

    def meanwhile(step: str) -> None:
        if step == "intent" and not during:
            during.append(0)
            during.append(httpx.get(f"{url}/api/v1/checkpoints").status_code)
            during.append(httpx.delete(f"{url}{API}/{C100}").status_code)
            during.append(httpx.delete(f"{url}{API}/{C200}").status_code)

    store.delete_step_hook = meanwhile
    assert httpx.delete(f"{url}{API}/{C100}", timeout=60).status_code == 204
    assert during == [0, 200, 409, 204]
    assert objects(s3, s3_bucket, 100) == objects(s3, s3_bucket, 200) == []
    assert len(objects(s3, s3_bucket, 300)) > 0


def test_a_delete_the_bucket_refuses_in_part_answers_what_happened(
    box: str, later: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    """DeleteObjects answers an error for one key of the batch: the answer says how many
    objects went and which did not; the list shows what is left; the next open finishes."""
    faults = S3Faults(s3.endpoint)
    faults.refuse_delete = "checkpoint-300/optimizer.pt"
    with run_server(faults) as endpoint:
        location = parse_location(box, endpoint=endpoint)
        assert location is not None
        store = BucketStore.open_bucket(ObjectStorage.open(location), later, settle_seconds=0)
        with store, run_server(create_app(store, sweep_interval=None)) as url:
            answer = httpx.delete(f"{url}{API}/{C300}")
            listed_after = httpx.get(f"{url}{API}").json()["checkpoints"]
    assert answer.status_code == 503
    assert answer.headers["x-should-retry"] == "false"
    detail = answer.json()["detail"]
    assert "is not finished" in detail and "could not be" in detail
    assert "checkpoint-300/optimizer.pt" in detail and "AccessDenied" in detail
    assert objects(s3, s3_bucket, 300) == ["p/trainer/checkpoint-300/optimizer.pt"]
    left = {c["checkpoint_id"]: c["user_metadata"] or {} for c in listed_after}
    assert left[C300].get("incomplete") == "true"  # what is left is not a checkpoint to use
    assert len(s3.keys(s3_bucket, "p/.ckpt-tui/deletes/")) == 1
    again = opened(box, later)  # the next open finishes it
    with again:
        assert again.recovery_problems == []
    assert objects(s3, s3_bucket, 300) == []
    assert s3.keys(s3_bucket, "p/.ckpt-tui/deletes/") == []


async def twice_in_one_batch(
    url: str, store: Store | BucketStore, queue: DeleteQueue
) -> list[httpx.Response]:
    """DELETE C100, C200, then C300 twice; the two of C300 reach the store in one batch: the
    test holds the store's lock until the first two DELETEs hold both batches the server
    does at once (`MAX_BATCHES`) and both of C300 wait for the next."""
    async with httpx.AsyncClient(base_url=url + API, timeout=60) as client:
        with store.guard.lock:
            first = asyncio.create_task(client.delete(f"/{C100}"))
            await until(lambda: queue.draining == 1 and queue.waiting == 0)
            second = asyncio.create_task(client.delete(f"/{C200}"))
            await until(lambda: queue.draining == 2 and queue.waiting == 0)
            twice = [asyncio.create_task(client.delete(f"/{C300}")) for _ in range(2)]
            await until(lambda: queue.waiting == 2)
        return list(await asyncio.gather(first, second, *twice))


@pytest.mark.parametrize("kind", ["folder", "bucket"])
def test_a_checkpoint_named_twice_in_one_batch_is_deleted_once_then_not_found(
    kind: str, box: str, later: FixedClock, tmp_path: Path, s3: S3Server, s3_bucket: str
) -> None:
    """As on a folder, the second DELETE of one checkpoint in a batch answers 404 (the first
    deleted it), not 409; the other checkpoints of the batch are deleted."""
    if kind == "bucket":
        store: Store | BucketStore = opened(box, later)
    else:
        store = Store.open(tmp_path / "box", later, settle_seconds=0)
    app = create_app(store, sweep_interval=None)
    with store, run_server(app) as url:
        answers = asyncio.run(twice_in_one_batch(url, store, app.state.deletes))
        left = httpx.get(f"{url}{API}").json()["checkpoints"]
    assert [answer.status_code for answer in answers[:2]] == [204, 204]
    assert sorted(answer.status_code for answer in answers[2:]) == [204, 404]
    missing = next(answer for answer in answers[2:] if answer.status_code == 404)
    assert missing.json()["detail"] == f"checkpoint {C300!r} not found in run 'trainer'"
    assert left == []
    if kind == "bucket":
        assert [objects(s3, s3_bucket, step) for step in (100, 200, 300)] == [[], [], []]
        assert s3.keys(s3_bucket, "p/.ckpt-tui/deletes/") == []
    else:
        assert list((tmp_path / "box" / "trainer").glob("checkpoint-*")) == []
