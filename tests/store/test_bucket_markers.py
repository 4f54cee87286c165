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
