"""kill -9 of a process deleting a checkpoint from a bucket loses nothing outside the
confirmed set, and the next open finishes the delete (against moto)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from ckpt_tui.store.bucket.deleting import BucketDeleter
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.meta import Row
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support.bucket_places import bucket_place
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
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
def child(endpoint: str, bucket: str, stop_after: int) -> Iterator[subprocess.Popen[str]]:
    command = [sys.executable, "-m", "tests.support.bucket_delete_child"]
    args = [endpoint, bucket, "run/step-10", "8", str(stop_after)]
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
        upsert=[Row("run", "step-10", 0, public=True), Row("run", "step-100", 0, public=True)]
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
    assert [(r.checkpoint_id, r.public) for r in rows] == [("step-100", True)]


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
    finished_at_next_open(s3, s3_bucket)


def test_a_kill_while_a_batch_is_answered_loses_nothing_and_the_next_open_finishes(
    s3: S3Server, s3_bucket: str
) -> None:
    """The server has deleted a batch but the answer never reaches the killed process."""
    seeded(s3, s3_bucket)
    faults = S3Faults(s3.endpoint)
    faults.hold_delete_answers = threading.Event()
    with run_server(faults) as endpoint:
        try:
            with child(endpoint, s3_bucket, stop_after=0) as process:
                wait_for(process, "intent")
                assert faults.delete_done.wait(GUARD)
                killed(process)
        finally:
            faults.hold_delete_answers.set()
    assert s3.keys(s3_bucket, "store/run/step-10/") == DOOMED[8:]
    finished_at_next_open(s3, s3_bucket)
