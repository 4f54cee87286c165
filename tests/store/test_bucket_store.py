"""A bucket prefix read as a store: every layout a folder holds, read from a real S3 server
(moto) by the same discovery code, with the objects' sizes; failures fail closed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store import Store
from ckpt_tui.store.blobs import FolderStorage, objects
from ckpt_tui.store.blobs.base import StorageReadError
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.store.discover import FoundRun, discover
from ckpt_tui.store.files import reading_from
from ckpt_tui.timekeeping.clock import FixedClock
from tests.support import layouts as L
from tests.support.bucket_tap import TappedBucket
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server


def every_layout(root: Path, clock: FixedClock) -> Path:
    """A folder with each layout discovery reads, and a Tinker-layout run."""
    L.hf_trainer_output(root / "trainer", steps=(100, 200), best=100)
    L.peft_adapter(root / "adapters/lora-a", rank=16)
    L.sharded_pretrained(root / "exports/gpt2")
    L.full_torch_checkpoint(root / "loose/model-step500.pt")
    L.lightning_ckpt(root / "lightning/epoch=3.ckpt")
    L.deepspeed_run(root / "ds", steps=(100, 200), latest=100)
    L.dcp_checkpoint(root / "dcp/step-10")
    L.dcp_checkpoint(root / "dcp/step-20", with_metadata=False)
    L.accelerate_checkpoint(root / "acc/checkpoints/checkpoint_0")
    with Store.open(root, clock) as store:
        store.create_run("tinker-run", "Qwen/Qwen3-8B", lora_rank=32)
        store.add_checkpoint("tinker-run", "weights/0001", {"adapter.bin": b"x" * 1000})
        store.add_checkpoint("tinker-run", "sampler_weights/0001", {"a.bin": b"y" * 10})
    return root


HANG_GUARD = 60.0
"""Seconds a test waits for an open that may hang (a guard, not a measurement)."""


def listing(store: Store | BucketStore) -> dict[str, tuple[int | None, dict[str, str]]]:
    """tinker path -> (size, user_metadata) of every checkpoint."""
    checkpoints, _ = store.list_checkpoints(0, 1000)
    return {c.tinker_path: (c.size_bytes, dict(c.user_metadata or {})) for c in checkpoints}


def open_bucket(url: str, clock: FixedClock) -> BucketStore:
    location = parse_location(url)
    assert location is not None
    return BucketStore.open_bucket(ObjectStorage.open(location), clock, settle_seconds=0)


def test_every_layout_reads_the_same_from_a_bucket(
    tmp_path: Path, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    root = every_layout(tmp_path / "box", clock)
    uploaded = s3.upload(s3_bucket, "team/ckpts", root, skip=(".ckpt-tui",))
    with Store.open(root, clock, readonly=True, settle_seconds=0) as folder:
        on_disk = listing(folder)
    bucket = open_bucket(f"s3://{s3_bucket}/team/ckpts", clock)
    with bucket:
        in_bucket = listing(bucket)
        assert bucket.problems().complete
        assert bucket.objects_listed == uploaded
        runs, _ = bucket.list_runs()
    assert len(on_disk) == 13
    assert in_bucket.keys() == on_disk.keys()
    for path, (size, facts) in on_disk.items():
        assert in_bucket[path][0] == size, path  # the objects' sizes: exact
        assert in_bucket[path][1] == facts, path
    dcp = in_bucket["tinker://dcp/weights/step-20"][1]
    assert dcp["incomplete"] == "true" and ".metadata" in dcp["incomplete_reason"]
    assert {run.training_run_id for run in runs} >= {"tinker-run", "trainer", "ds"}
    tinker = next(run for run in runs if run.training_run_id == "tinker-run")
    assert (tinker.base_model, tinker.lora_rank) == ("Qwen/Qwen3-8B", 32)


def test_a_bucket_that_cannot_be_listed_is_a_problem_not_an_empty_store(
    clock: FixedClock, s3_bucket: str
) -> None:
    with open_bucket("s3://no-such-bucket/prefix", clock) as store:
        checkpoints, total = store.list_checkpoints()
        problems = store.problems()
    assert (checkpoints, total) == ([], 0)
    assert not problems.complete
    assert "cannot be listed" in problems.lines[0]


def test_a_readonly_bucket_store_refuses_writes_and_writes_nothing(
    clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    s3.put(s3_bucket, "p/out/checkpoint-1/model.safetensors", b"junk")
    location = parse_location(f"s3://{s3_bucket}/p")
    assert location is not None
    storage = ObjectStorage.open(location)
    with BucketStore.open_bucket(storage, clock, settle_seconds=0, readonly=True) as store:
        assert store.readonly
        assert store.sweep_expired() == []
        with pytest.raises(Exception, match="read-only"):
            store.set_public("out", "weights/checkpoint-1", True)
    assert s3.keys(s3_bucket) == ["p/out/checkpoint-1/model.safetensors"]


def test_headers_are_read_with_ranged_gets_never_the_whole_object(
    tmp_path: Path, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    big = {"model.embed.weight": ("F32", [1024, 1024]), "lm_head.weight": ("F32", [1024, 512])}
    L.safetensors_file(tmp_path / "export/model.safetensors", big)  # 6 MiB of tensor data
    L.write(tmp_path / "saves/step.pt", L.torch_zip({"model": L.model_state(4, "F32")}))
    huge_pt = L.torch_zip({"model": {"w": L.Tensor("F32", (1024, 1024))}})
    L.write(tmp_path / "saves/huge.pt", huge_pt)  # 4 MiB of tensor data in the zip
    s3.upload(s3_bucket, "p", tmp_path)
    bucket = TappedBucket.at(f"s3://{s3_bucket}/p")
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        found = listing(store)
    export = found["tinker://export/sampler_weights/model.safetensors"]
    assert export[0] == (tmp_path / "export/model.safetensors").stat().st_size
    assert export[1]["params"] == str(1024 * 1024 + 1024 * 512)
    huge = found["tinker://saves/sampler_weights/huge.pt"]
    assert huge[0] == len(huge_pt) and huge[1]["params"] == str(1024 * 1024)
    assert bucket.bytes_read("p/export/model.safetensors") <= 128 * 1024
    assert bucket.bytes_read("p/saves/huge.pt") <= 256 * 1024
    assert all(start > 0 or n < 256 * 1024 for _, start, n in bucket.reads)


def test_a_safetensors_header_over_the_bound_is_refused_as_on_disk(
    clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    hostile = (200 * 1024 * 1024).to_bytes(8, "little") + b"{" * 1024
    s3.put(s3_bucket, "p/x/model.safetensors", hostile)
    bucket = TappedBucket.at(f"s3://{s3_bucket}/p")
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        facts = listing(store)["tinker://x/sampler_weights/model.safetensors"][1]
    assert "over the 100 MB limit" in facts["unreadable"]
    assert bucket.bytes_read("p/x/model.safetensors") <= len(hostile)


def test_a_file_that_cannot_be_read_is_a_problem_and_its_checkpoint_stays_listed(
    trainer_bucket: str, clock: FixedClock
) -> None:
    bucket = TappedBucket.at(trainer_bucket)
    bucket.failing_keys = {"p/out/checkpoint-200/trainer_state.json"}
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        found = listing(store)
        problems = store.problems()
    facts = found["tinker://out/weights/checkpoint-200"][1]
    assert "trainer_state.json cannot be read" in facts["unreadable"]
    assert "500" in facts["unreadable"]
    assert not problems.complete
    assert any("checkpoint-200" in line for line in problems.lines)


def test_a_listing_that_fails_later_keeps_what_was_known(
    trainer_bucket: str, clock: FixedClock
) -> None:
    bucket = TappedBucket.at(trainer_bucket)
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        before = listing(store)
        bucket.failing_listing = True
        store.rescan()
        assert listing(store) == before and len(before) == 2
        assert not store.problems().complete
        assert "503" in store.problems().lines[0]
        bucket.failing_listing = False
        store.rescan()
        assert store.problems().complete


def test_a_level_of_more_than_a_thousand_objects_is_listed_whole(
    clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    """Side by side, and flat (what a look does when the last one listed under a page of
    objects: the bucket may have grown since)."""
    for i in range(1010):  # more than one ListObjectsV2 page
        s3.put(s3_bucket, f"p/run/model-{i:04d}.pt.tmp", b"")
    bucket = open_bucket(f"s3://{s3_bucket}/p", clock)
    with bucket as store:
        assert store.list_checkpoints(0, 0)[1] == 1010
        assert len(list(bucket.storage.list_all(expected=0))) == 1010


def test_a_look_that_finds_every_object_as_it_was_reads_no_file_again(
    trainer_bucket: str, tmp_path: Path, clock: FixedClock, s3: S3Server, s3_bucket: str
) -> None:
    bucket = TappedBucket.at(trainer_bucket)
    with BucketStore.open_bucket(bucket, clock, settle_seconds=0) as store:
        before, reads = listing(store), len(bucket.reads)
        store.rescan()
        assert listing(store) == before and len(bucket.reads) == reads
        L.hf_trainer_output(tmp_path / "out", steps=(300,))
        s3.upload(s3_bucket, "p/out", tmp_path / "out", skip=("checkpoint-100", "checkpoint-200"))
        store.rescan()
        assert len(listing(store)) == 3 and len(bucket.reads) > reads


def test_the_walk_over_the_folder_storage_finds_what_it_finds_on_disk(
    tmp_path: Path, clock: FixedClock
) -> None:
    root = every_layout(tmp_path / "box", clock)
    on_disk = discover(root, reserved={"tinker-run"})
    with reading_from(FolderStorage(str(root))):
        through = discover(root, reserved={"tinker-run"})
    assert len(on_disk.runs) >= 8
    assert [walked(run) for run in through.runs] == [walked(run) for run in on_disk.runs]


def walked(run: FoundRun) -> tuple[str, list[tuple[str, int, dict[str, str]]]]:
    return run.run_id, [(cid, found.size, facts) for cid, found, facts in run.checkpoints]


def test_a_listing_without_end_is_a_problem_not_a_hang(
    clock: FixedClock, s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that answers every page empty with a next token would be listed forever:
    a listing that brings no object for `LIST_WAIT_SECONDS` fails, and says so."""
    monkeypatch.setattr(objects, "LIST_WAIT_SECONDS", 1.0)
    s3.put(s3_bucket, "p/out/checkpoint-1/model.safetensors", b"junk")
    faults = S3Faults(s3.endpoint)
    faults.endless_listing = True
    opened: list[BucketStore] = []
    with run_server(faults) as endpoint:
        location = parse_location(f"s3://{s3_bucket}/p", endpoint)
        assert location is not None
        storage = ObjectStorage.open(location)
        worker = threading.Thread(
            target=lambda: opened.append(BucketStore.open_bucket(storage, clock, settle_seconds=0))
        )
        worker.start()
        worker.join(HANG_GUARD)
        faults.endless_listing = False  # a listing still going now ends
        worker.join(HANG_GUARD)
        pages = len(faults.requests)
    assert opened, "the open did not finish"
    with opened[0] as store:
        problems = store.problems()
    assert not problems.complete
    assert "no object" in problems.lines[0]
    assert pages > 1  # it did follow the tokens for a while


def first_listing(method: str, path: str, query: str) -> bool:
    """The look's first request: the top level of the prefix `p`, listed with a delimiter."""
    return method == "GET" and "list-type=2" in query and "prefix=p%2F&" in f"{query}&"


def a_file_read(method: str, path: str, query: str) -> bool:
    """One of the walk's reads ahead: a GET of a checkpoint's file, not a listing."""
    return method == "GET" and "list-type" not in query and "/p/out/" in path


@pytest.mark.parametrize("held", [first_listing, a_file_read], ids=["listing", "reading"])
def test_a_store_closed_during_its_first_look_sends_no_more_requests(
    clock: FixedClock, trainer_bucket: str, s3: S3Server, held: Callable[[str, str, str], bool]
) -> None:
    """The app quitting (or `prune --yes` stopped) while a bucket is still first read
    (`first_look_behind`): after `close`, the look asks for nothing that was not in flight
    (no listing, no metadata read, no store id written) and ends once that is answered. (A
    process that ends while obstore still answers can abort: see `ObjectStorage.stop`.)"""
    faults = S3Faults(s3.endpoint)
    faults.hold_answers = gate = threading.Event()
    faults.hold_answers_to = held
    with run_server(faults) as endpoint:
        location = parse_location(trainer_bucket, endpoint)
        assert location is not None
        storage = ObjectStorage.open(location)
        store = BucketStore.open_bucket(storage, clock, first_look_behind=True, keep_store_id=True)
        look = store._behind
        assert look is not None
        try:
            assert faults.answer_held.wait(HANG_GUARD)
            store.close()
            sent = len(faults.requests)
        finally:
            gate.set()
        look.join(HANG_GUARD)
        assert not look.is_alive()
        after = faults.requests[sent:]
    assert [request for request in after if not a_file_read(*request)] == []
    with pytest.raises(StorageReadError, match="the store was closed"):
        storage.read_range("p/out/checkpoint-100/config.json", 0, 10)
