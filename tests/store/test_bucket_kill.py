"""kill -9 of a process deleting a checkpoint from a bucket loses nothing outside the
confirmed set, and the next open finishes the delete (against moto)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import msgspec
import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.store.bucket.deleting import BucketDeleter
from ckpt_tui.store.bucket.intent import BatchIntent
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.meta import Row
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support import layouts as L
from tests.support.bucket_places import bucket_place
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults, deletes
from tests.support.s3_server import S3Server

ROOT = Path(__file__).resolve().parents[2]
DOOMED = [f"store/run/step-10/shard-{n:03}" for n in range(40)]
KEPT = [
    "store/run/step-100/shard-000",
    "store/run/step-1/shard-000",
    "store/run/step-10.safetensors",
    "store/run/run.json",
    "store/other/step-10/shard-000",
]
GUARD = 120.0
"""Seconds a step may take before the test gives up (a hang guard, not a timing bet)."""


@contextmanager
def child(
    endpoint: str, bucket: str, stop_after: int, checkpoints: str = "run/step-10"
) -> Iterator[subprocess.Popen[str]]:
    command = [sys.executable, "-m", "tests.support.bucket_delete_child"]
    args = [endpoint, bucket, checkpoints, "8", str(stop_after)]
    process = subprocess.Popen(
        [*command, *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(GUARD)


def wait_for(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdout is not None
    for said in process.stdout:
        if said.strip() == line:
            return
    pytest.fail(f"the deleting process ended before saying {line!r}")


def killed(process: subprocess.Popen[str]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(GUARD) == -signal.SIGKILL


def seeded(s3: S3Server, bucket: str) -> None:
    for key in DOOMED + KEPT:
        s3.put(bucket, key, b"weights")
    place = bucket_place(s3.endpoint, bucket)
    BucketMeta(place, False, 0).apply(
        upsert=[
            Row("run", "weights/step-10", 0, public=True),
            Row("run", "weights/step-100", 0, public=True),
        ]
    )


def finished_at_next_open(s3: S3Server, bucket: str) -> None:
    """What a kill left: the rest of the checkpoint and its record; then the next open."""
    place = bucket_place(s3.endpoint, bucket)
    outside = [k for k in s3.keys(bucket) if ".ckpt-tui" not in k and k not in DOOMED]
    assert outside == sorted(KEPT)
    assert s3.keys(bucket, "store/.ckpt-tui/deletes/") != []
    later = FixedClock(SystemClock().now() + timedelta(days=1))
    recovery = BucketDeleter(place, BucketMeta(place, False, 0), clock=later).recover()
    assert [(o.checkpoint, o.done) for o in recovery.finished] == [("run/step-10", True)]
    assert recovery.problems == []
    assert s3.keys(bucket) == sorted(
        [*KEPT, "store/.ckpt-tui/meta.json", "store/.ckpt-tui/store.json"]
    )
    rows = BucketMeta(place, True, 0).rows()
    assert [(r.checkpoint_id, r.public) for r in rows] == [("weights/step-100", True)]


def test_a_kill_between_batches_loses_nothing_and_the_next_open_finishes(
    s3: S3Server, s3_bucket: str
) -> None:
    seeded(s3, s3_bucket)
    with child(s3.endpoint, s3_bucket, stop_after=2) as process:
        wait_for(process, "intent")
        wait_for(process, "batch")
        wait_for(process, "batch")
        killed(process)
    left = s3.keys(s3_bucket, "store/run/step-10/")
    assert left == DOOMED[16:]  # two batches of 8 went, the rest is there
    location = parse_location(f"s3://{s3_bucket}/store", endpoint=s3.endpoint)
    assert location is not None
    browsing = BucketStore.open_bucket(ObjectStorage.open(location), SystemClock(), readonly=True)
    with browsing:  # read-only: said, as a problem that makes the list incomplete
        problems = browsing.problems()
    assert not problems.complete
    assert problems.lines == [
        ".ckpt-tui/deletes: an interrupted delete of run/step-10 is waiting in "
        f"s3://{s3_bucket}/store: open the store writable to finish it"
    ]
    assert s3.keys(s3_bucket, "store/run/step-10/") == left
    finished_at_next_open(s3, s3_bucket)


def test_a_kill_while_a_batch_is_answered_loses_nothing_and_the_next_open_finishes(
    s3: S3Server, s3_bucket: str
) -> None:
    """The server has deleted a batch but the answer never reaches the killed process."""
    seeded(s3, s3_bucket)
    faults = S3Faults(s3.endpoint)
    faults.hold_answers_to = deletes
    faults.hold_answers = gate = threading.Event()
    with run_server(faults) as endpoint:
        try:
            with child(endpoint, s3_bucket, stop_after=0) as process:
                wait_for(process, "intent")
                assert faults.answer_held.wait(GUARD)
                killed(process)
        finally:
            gate.set()
    assert s3.keys(s3_bucket, "store/run/step-10/") == DOOMED[8:]
    finished_at_next_open(s3, s3_bucket)


def test_a_kill_inside_a_batch_of_checkpoints_loses_nothing_and_the_next_open_finishes_it(
    s3: S3Server, s3_bucket: str
) -> None:
    """Three checkpoints deleted as one batch (one record naming the keys of all three,
    DeleteObjects of 8 keys spanning them), killed after two of its nine requests."""
    seeded(s3, s3_bucket)
    batch = {
        "run/step-10": DOOMED,
        "run/step-20": [f"store/run/step-20/shard-{n:03}" for n in range(12)],
        "run/step-30": [f"store/run/step-30/shard-{n:03}" for n in range(12)],
    }
    for key in batch["run/step-20"] + batch["run/step-30"]:
        s3.put(s3_bucket, key, b"weights")
    doomed = sorted(key for keys in batch.values() for key in keys)
    with child(s3.endpoint, s3_bucket, 2, ",".join(batch)) as process:
        wait_for(process, "intent")
        wait_for(process, "batch")
        wait_for(process, "batch")
        killed(process)
    assert [k for k in s3.keys(s3_bucket) if ".ckpt-tui" not in k] == sorted(KEPT + doomed[16:])
    (record,) = s3.keys(s3_bucket, "store/.ckpt-tui/deletes/")
    body = s3.client.get_object(Bucket=s3_bucket, Key=record)["Body"].read()
    intents = msgspec.json.decode(body, type=BatchIntent).batch
    assert [(i.checkpoint, i.keys) for i in intents] == list(batch.items())

    location = parse_location(f"s3://{s3_bucket}/store", endpoint=s3.endpoint)
    assert location is not None
    browsing = BucketStore.open_bucket(ObjectStorage.open(location), SystemClock(), readonly=True)
    with browsing:  # read-only: each checkpoint of the batch said waiting
        assert browsing.recovery_problems == [
            f"an interrupted delete of {name} is waiting in s3://{s3_bucket}/store: open the "
            "store writable to finish it"
            for name in batch
        ]
    place = bucket_place(s3.endpoint, s3_bucket)
    later = FixedClock(SystemClock().now() + timedelta(days=1))
    recovery = BucketDeleter(place, BucketMeta(place, False, 0), clock=later).recover()
    assert [(o.checkpoint, o.done, len(o.deleted)) for o in recovery.finished] == [
        ("run/step-10", True, 40 - 16),
        ("run/step-20", True, 12),
        ("run/step-30", True, 12),
    ]
    assert recovery.problems == []
    assert s3.keys(s3_bucket) == sorted(
        [*KEPT, "store/.ckpt-tui/meta.json", "store/.ckpt-tui/store.json"]
    )
    rows = BucketMeta(place, True, 0).rows()
    assert [(r.checkpoint_id, r.public) for r in rows] == [("weights/step-100", True)]


def test_kill_9_of_serve_during_a_bulk_delete_loses_nothing_and_the_next_open_finishes(
    tmp_path: Path, s3: S3Server, s3_bucket: str
) -> None:
    """`serve s3://…` is killed while it deletes a published checkpoint: the S3 server has done
    the DeleteObjects, its answer never arrives. (A kill between batches, with keys left to
    delete, is the tests above: a checkpoint of over 1,000 objects takes minutes to upload
    to moto on a busy machine.)"""
    L.hf_trainer_output(tmp_path / "box/trainer", steps=(100, 200))
    s3.upload(s3_bucket, "p", tmp_path / "box")
    for n in range(20):
        s3.put(s3_bucket, f"p/trainer/checkpoint-100/extra/shard-{n:04}.bin", b"x")
    doomed = s3.keys(s3_bucket, "p/trainer/checkpoint-100/")
    kept = [key for key in s3.keys(s3_bucket) if key not in doomed]
    faults = S3Faults(s3.endpoint)
    faults.backdate = True  # the objects have settled by the server's clock
    gate = threading.Event()
    with run_server(faults) as endpoint:
        try:
            served_then_killed(endpoint, s3, s3_bucket, (faults, gate), tmp_path)
        finally:
            gate.set()
    assert s3.keys(s3_bucket, "p/trainer/checkpoint-100/") == []
    outside = [key for key in s3.keys(s3_bucket) if key not in doomed and ".ckpt-tui/" not in key]
    assert outside == [key for key in kept if ".ckpt-tui/" not in key]
    assert len(s3.keys(s3_bucket, "p/.ckpt-tui/deletes/")) == 1  # the record: not finished
    assert "checkpoint-100" in meta_entries(s3, s3_bucket)  # still published: not finished

    again = S3Faults(s3.endpoint)
    again.backdate = True
    with run_server(again) as endpoint:
        location = parse_location(f"s3://{s3_bucket}/p", endpoint=endpoint)
        assert location is not None
        storage = ObjectStorage.open(location)
        store = BucketStore.open_bucket(storage, SystemClock())
        with store:
            assert store.recovery_problems == []
            listed = [c.checkpoint_id for c in store.list_checkpoints(0, 10)[0]]
    assert listed == ["weights/checkpoint-200"]
    assert s3.keys(s3_bucket, "p/trainer/checkpoint-100/") == []
    assert [key for key in s3.keys(s3_bucket) if ".ckpt-tui/" not in key] == kept
    assert s3.keys(s3_bucket, "p/.ckpt-tui/deletes/") == []
    assert "checkpoint-100" not in meta_entries(s3, s3_bucket)


def meta_entries(s3: S3Server, bucket: str) -> str:
    """The checkpoint entries of the bucket's shared metadata, as text."""
    document = s3.client.get_object(Bucket=bucket, Key="p/.ckpt-tui/meta.json")["Body"].read()
    return str(json.loads(document)["checkpoints"])


def served_then_killed(
    endpoint: str,
    s3: S3Server,
    bucket: str,
    held: tuple[S3Faults, threading.Event],
    tmp_path: Path,
) -> None:
    """Run `serve s3://BUCKET/p` through `endpoint`, publish checkpoint-100, ask to delete
    it, and kill the server with SIGKILL once the S3 server has done its DeleteObjects (the
    answer waits for the gate)."""
    faults, gate = held
    env = {**os.environ, **s3.environment(), "AWS_ENDPOINT_URL": endpoint}
    command = [sys.executable, "-m", "ckpt_tui", "serve", f"s3://{bucket}/p", "--port", "0"]
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    ) as server:
        try:
            assert server.stdout is not None
            url = server.stdout.readline().split("serving ", 1)[1].split(" ", 1)[0]
            path = f"{url}/api/v1/training_runs/trainer/checkpoints/weights/checkpoint-100"
            assert httpx.post(f"{path}/publish", timeout=GUARD).status_code == 204
            # from now on: the first write's probe deleted its scratch object before
            faults.hold_answers_to = deletes
            faults.hold_answers = gate
            answers: list[object] = []
            asking = threading.Thread(target=_delete, args=(path, answers))
            asking.start()
            assert faults.answer_held.wait(GUARD)
            killed(server)
            asking.join(GUARD)
            assert answers and isinstance(answers[0], httpx.TransportError)
        finally:
            if server.poll() is None:
                os.kill(server.pid, signal.SIGKILL)


def _delete(path: str, answers: list[object]) -> None:
    try:
        answers.append(httpx.delete(path, timeout=GUARD))
    except httpx.HTTPError as exc:
        answers.append(exc)


def test_kill_9_of_serve_during_a_prune_keeps_what_is_kept_and_no_checkpoint_half_gone(
    tmp_path: Path, s3: S3Server, s3_bucket: str
) -> None:
    """`prune --keep-last 1 --yes` against `serve s3://…`, killed once the first DeleteObjects
    is done (every answer held): the newest and the published checkpoint are untouched, and
    after the next open each checkpoint is either whole or gone."""
    steps = (100, 200, 300, 400, 500, 600)
    L.hf_trainer_output(tmp_path / "box/trainer", steps=steps)
    s3.upload(s3_bucket, "p", tmp_path / "box")
    whole = {step: s3.keys(s3_bucket, f"p/trainer/checkpoint-{step}/") for step in steps}
    faults = S3Faults(s3.endpoint)
    faults.backdate = True
    gate = threading.Event()
    env = {**os.environ, **s3.environment(), "AWS_ENDPOINT_URL": "", "CKPT_TUI_TEST": "1"}
    with run_server(faults) as endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
        command = [sys.executable, "-m", "ckpt_tui", "serve", f"s3://{s3_bucket}/p", "--port", "0"]
        with subprocess.Popen(
            command,
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as server:
            try:
                assert server.stdout is not None
                url = server.stdout.readline().split("serving ", 1)[1].split(" ", 1)[0]
                api = f"{url}/api/v1/training_runs/trainer/checkpoints/weights"
                assert httpx.post(f"{api}/checkpoint-200/publish", timeout=GUARD).status_code == 204
                # from now on: the first write's probe deleted its scratch object before
                faults.hold_answers_to = deletes
                faults.hold_answers = gate
                prune = [sys.executable, "-m", "ckpt_tui", "prune", "--url", url]
                pruning = subprocess.Popen(
                    [*prune, "--keep-last", "1", "--yes"],
                    cwd=tmp_path,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                assert faults.answer_held.wait(GUARD)
                killed(server)
                pruning.wait(GUARD)
            finally:
                gate.set()
                for started in (server, pruning):
                    if started is not None and started.poll() is None:
                        os.kill(started.pid, signal.SIGKILL)
                        started.wait(GUARD)
        assert s3.keys(s3_bucket, "p/trainer/checkpoint-600/") == whole[600]
        assert s3.keys(s3_bucket, "p/trainer/checkpoint-200/") == whole[200]
        assert s3.keys(s3_bucket, "p/.ckpt-tui/deletes/") != []  # at least one was interrupted

        # The next open asks the same server (its clock behind, as `serve` saw it): a record
        # written just before the kill names keys still there, and the times they answer
        # now are the times the record was made against, so they are deleted, not taken
        # for keys written again since.
        location = parse_location(f"s3://{s3_bucket}/p", endpoint=endpoint)
        assert location is not None
        later = FixedClock(SystemClock().now() + timedelta(days=1))
        store = BucketStore.open_bucket(ObjectStorage.open(location), later)
        with store:
            assert store.recovery_problems == []
    for step in steps:
        left = s3.keys(s3_bucket, f"p/trainer/checkpoint-{step}/")
        assert left in (whole[step], []), f"checkpoint-{step} is half gone: {left}"
    assert s3.keys(s3_bucket, "p/.ckpt-tui/deletes/") == []
    assert "checkpoint-200" in meta_entries(s3, s3_bucket)
