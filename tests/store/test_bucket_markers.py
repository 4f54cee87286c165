"""Folder markers: zero-byte keys ending in `/` that the S3 console's "Create folder" (and
other tools) write. They are folders, not files; a checkpoint holding them deletes like any
other (against moto)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support import layouts as L
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server

LATER = FixedClock(SystemClock().now() + timedelta(days=1))
"""A clock by which every object written in a test has settled."""


def some_layouts(root: Path) -> Path:
    L.hf_trainer_output(root / "trainer", steps=(100, 200), best=100)
    L.peft_adapter(root / "adapters/lora-a", rank=16)
    L.dcp_checkpoint(root / "dcp/step-10")
    return root


def with_markers(s3: S3Server, bucket: str) -> list[str]:
    """A marker for every folder above every key (as the console makes them), and one for an
    empty folder inside a checkpoint; the markers' keys."""
    folders = {""}
    for key in s3.keys(bucket):
        parts = key.split("/")[:-1]
        folders.update("/".join(parts[: n + 1]) + "/" for n in range(len(parts)))
    folders.discard("")
    folders.add("team/trainer/checkpoint-100/empty/")
    for marker in folders:
        s3.put(bucket, marker, b"")
    return sorted(folders)


def opened(bucket: str) -> BucketStore:
    location = parse_location(f"s3://{bucket}/team")
    assert location is not None
    return BucketStore.open_bucket(ObjectStorage.open(location), LATER, settle_seconds=0)


def listing(store: BucketStore) -> dict[str, tuple[int | None, dict[str, str]]]:
    checkpoints, _ = store.list_checkpoints(0, 1000)
    return {c.tinker_path: (c.size_bytes, dict(c.user_metadata or {})) for c in checkpoints}


def test_folder_markers_are_folders_and_a_checkpoint_holding_them_is_deleted(
    tmp_path: Path, s3: S3Server, s3_bucket: str
) -> None:
    root = some_layouts(tmp_path / "box")
    plain = s3.make_bucket()
    s3.upload(plain, "team", root)
    s3.upload(s3_bucket, "team", root)
    markers = with_markers(s3, s3_bucket)
    without, store = opened(plain), opened(s3_bucket)
    with without, store:
        assert listing(store) == listing(without)
        assert len(listing(store)) == 4
        # every marker is a folder, but an empty folder's: from the listing alone, a file
        assert store.objects_listed == without.objects_listed + 1
        for checkpoint in store.list_checkpoints(0, 1000)[0]:
            run_id = checkpoint.tinker_path.removeprefix("tinker://").split("/")[0]
            store.delete_checkpoint(run_id, checkpoint.checkpoint_id)
        assert listing(store) == {}
        assert store.problems().complete
    left = [key for key in s3.keys(s3_bucket) if ".ckpt-tui" not in key]
    assert left == markers  # obstore cannot address a key ending in "/": they stay, empty


def test_a_batch_of_checkpoints_in_a_folder_of_markers_is_deleted(
    tmp_path: Path, s3: S3Server, s3_bucket: str
) -> None:
    """Two checkpoints side by side deleted as one batch, through one listing of their
    folder before and one after (the proxy counts them): the markers in it (the folder's,
    each checkpoint's, an empty folder's inside one) are folders there too, and no object of
    the other layouts goes."""
    s3.upload(s3_bucket, "team", some_layouts(tmp_path / "box"))
    markers = with_markers(s3, s3_bucket)
    others = [k for k in s3.keys(s3_bucket) if "/trainer/" not in k and k not in markers]
    faults = S3Faults(s3.endpoint)
    with run_server(faults) as endpoint:
        location = parse_location(f"s3://{s3_bucket}/team", endpoint=endpoint)
        assert location is not None
        store = BucketStore.open_bucket(ObjectStorage.open(location), LATER, settle_seconds=0)
        assert isinstance(store, BucketStore)
        with store:
            before = sorted(listing(store))
            faults.requests.clear()
            keys = [("trainer", f"weights/checkpoint-{step}") for step in (100, 200)]
            assert store.delete_checkpoints(keys) == [None, None]
            listed = faults.listed()
            after = sorted(listing(store))
            assert store.problems().complete
    assert listed == ["team/trainer/"] * 2
    assert len(before) == 4
    assert after == [path for path in before if "/weights/checkpoint-" not in path]
    assert [k for k in s3.keys(s3_bucket) if k not in markers and ".ckpt-tui" not in k] == others
