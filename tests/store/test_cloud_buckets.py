"""`az://` and `gs://` buckets read, written and deleted from through the same obstore code as
S3, against real local emulators (Azurite; fake-gcs-server): a Tinker and a Trainer layout
listed with the objects' sizes, the metadata's conditional writes, a delete and its intent
record. fake-gcs-server takes no XML API upload (what obstore's GCS store sends), so on it
every write is refused: what is checked there is that a refused write changes nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import msgspec
import obstore
import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store import Store
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket import BucketStore
from ckpt_tui.store.bucket.deleting import DELETES, BucketDeleter
from ckpt_tui.store.bucket.intent import DeleteIntent
from ckpt_tui.store.bucket.metadata import BucketMeta
from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.meta import Row
from ckpt_tui.timekeeping.clock import FixedClock, SystemClock
from tests.support import layouts as L
from tests.support.bucket_races import RACE_NOW_US, b_wins_the_race
from tests.support.cloud_emulators import Emulator

LATER = FixedClock(SystemClock().now() + timedelta(days=1))
"""A clock by which every object written in a test has settled."""
CHECKPOINT = ["store/run/step-10/config.json", "store/run/step-10/model.safetensors"]
NEIGHBOURS = ["store/run/step-100/model.safetensors", "store/run/run.json"]


def tinker_and_trainer(root: Path, clock: FixedClock) -> Path:
    """A folder with a Trainer output and a Tinker-layout run, as a box would sync them."""
    L.hf_trainer_output(root / "trainer", steps=(100, 200), best=100)
    with Store.open(root, clock) as store:
        store.create_run("tinker-run", "Qwen/Qwen3-8B", lora_rank=32)
        store.add_checkpoint("tinker-run", "weights/0001", {"adapter.bin": b"x" * 1000})
        store.add_checkpoint("tinker-run", "sampler_weights/0001", {"a.bin": b"y" * 10})
    return root


def sizes(store: Store | BucketStore) -> dict[str, int | None]:
    checkpoints, _ = store.list_checkpoints(0, 1000)
    return {c.tinker_path: c.size_bytes for c in checkpoints}


def opened(url: str, clock: FixedClock, endpoint: str | None = None) -> BucketStore:
    location = parse_location(url, endpoint)
    assert location is not None
    return BucketStore.open_bucket(ObjectStorage.open(location), clock, settle_seconds=0)


def seeded(cloud: Emulator) -> str:
    bucket = cloud.make_bucket()
    for key in [*CHECKPOINT, *NEIGHBOURS]:
        cloud.put(bucket, key, b"weights")
    return bucket


def test_a_tinker_and_a_trainer_layout_list_with_the_objects_sizes(
    tmp_path: Path, clock: FixedClock, cloud: Emulator
) -> None:
    root = tinker_and_trainer(tmp_path / "box", clock)
    bucket = cloud.make_bucket()
    uploaded = cloud.upload(bucket, "team/ckpts", root, skip=(".ckpt-tui",))
    with Store.open(root, clock, readonly=True, settle_seconds=0) as folder:
        on_disk = sizes(folder)
    store = opened(f"{cloud.scheme}://{bucket}/team/ckpts", clock)
    with store:
        assert store.problems().complete
        assert store.objects_listed == uploaded
        assert sizes(store) == on_disk
    assert len(on_disk) == 4 and "tinker://tinker-run/weights/0001" in on_disk


def test_a_checkpoint_s_files_are_listed_and_read_for_a_download(
    tmp_path: Path, clock: FixedClock, cloud: Emulator
) -> None:
    """What `serve` signs and sends of a checkpoint (ckpt_tui.store.bucket.files): its
    objects by name and size, each read by ranged GETs held to the version listed."""
    root = tinker_and_trainer(tmp_path / "box", clock)
    bucket = cloud.make_bucket()
    cloud.upload(bucket, "team/ckpts", root, skip=(".ckpt-tui",))
    folder = root / "trainer/checkpoint-200"
    with opened(f"{cloud.scheme}://{bucket}/team/ckpts", clock) as store:
        files = store.checkpoint_files("trainer", "weights/checkpoint-200")
        assert {f.name: f.size for f in files} == {
            p.name: p.stat().st_size for p in folder.iterdir()
        }
        served = store.open_checkpoint_file("trainer", "weights/checkpoint-200", "config.json")
        got = b"".join(served.chunks(0, served.size, 100))
    assert got == (folder / "config.json").read_bytes()


def test_the_location_s_endpoint_reaches_the_emulator(
    cloud: Emulator, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`endpoint` (the config file's) with only credentials in the environment: GCS calls it
    its base URL."""
    for name in cloud.environment():
        monkeypatch.delenv(name)
    for name, value in cloud.credentials.items():
        monkeypatch.setenv(name, value)
    bucket = seeded(cloud)
    store = opened(f"{cloud.scheme}://{bucket}/store", clock, cloud.endpoint)
    with store:
        assert store.problems().complete, store.problems()
        assert store.objects_listed == len(CHECKPOINT) + len(NEIGHBOURS)


def test_a_plain_http_endpoint_from_the_environment_is_allowed(
    cloud: Emulator, clock: FixedClock
) -> None:
    """As for S3's AWS_ENDPOINT_URL: a plain-HTTP endpoint the user named in the cloud's
    endpoint variable (GOOGLE_BASE_URL, AZURE_STORAGE_ENDPOINT) is allowed, with no
    `*_ALLOW_HTTP` variable."""
    assert not [name for name in cloud.environment() if name.endswith("ALLOW_HTTP")]
    bucket = seeded(cloud)
    store = opened(f"{cloud.scheme}://{bucket}/store", clock)
    with store:
        assert store.problems().complete, store.problems()
        assert store.objects_listed == len(CHECKPOINT) + len(NEIGHBOURS)


def test_two_writers_racing_on_azure_lose_no_update(
    azure_emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B writes between A's read and A's write: Azure refuses A's If-Match write, A reads
    again and makes its change over B's; every opener sees both."""
    place = azure_emulator.place(azure_emulator.make_bucket())
    a, reads = b_wins_the_race(place, monkeypatch)
    assert reads >= 2  # A lost the race once
    assert a.writes.supported is True and a.problem is None
    again = BucketMeta(place, True, 0)
    assert {(r.checkpoint_id, r.public, r.expires_us) for r in again.rows()} == {
        ("start", True, None),
        ("from-b", True, None),
        ("from-a", False, RACE_NOW_US + 7),
    }
    assert again.store_id == a.store_id is not None


def test_an_azure_delete_records_its_intent_then_deletes_the_checkpoint_only(
    azure_emulator: Emulator,
) -> None:
    bucket = seeded(azure_emulator)
    place = azure_emulator.place(bucket)
    meta = BucketMeta(place, False, 0)
    meta.apply(upsert=[Row("run", "weights/step-10", 0, public=True)])
    records: list[DeleteIntent] = []

    def at(step: str) -> None:
        if step == "intent":
            [key] = azure_emulator.keys(bucket, f"store/.ckpt-tui/{DELETES}/")
            data = bytes(obstore.get(place.store, key).bytes())
            records.append(msgspec.json.decode(data, type=DeleteIntent))

    deleter = BucketDeleter(place, meta, clock=LATER)
    deleter.step_hook = at
    outcome = deleter.delete("run/step-10", "run", "weights/step-10")
    assert outcome.done, outcome.error()
    assert [sorted(r.keys) for r in records] == [CHECKPOINT]
    assert sorted(outcome.deleted) == CHECKPOINT
    left = [k for k in azure_emulator.keys(bucket) if ".ckpt-tui" not in k]
    assert left == sorted(NEIGHBOURS)
    assert azure_emulator.keys(bucket, f"store/.ckpt-tui/{DELETES}/") == []
    assert BucketMeta(place, True, 0).rows() == []


def test_a_gcs_metadata_write_the_server_refuses_changes_nothing(gcs_emulator: Emulator) -> None:
    bucket = gcs_emulator.make_bucket()
    meta = BucketMeta(gcs_emulator.place(bucket), False, 0)
    with pytest.raises(StoreError, match="400"):
        meta.apply(upsert=[Row("run", "a", 0, public=True)])
    assert gcs_emulator.keys(bucket) == []


def test_a_gcs_delete_whose_intent_cannot_be_written_deletes_nothing(
    gcs_emulator: Emulator,
) -> None:
    bucket = seeded(gcs_emulator)
    deleter = BucketDeleter(gcs_emulator.place(bucket), clock=LATER)
    with pytest.raises(StoreError, match="400"):
        deleter.delete("run/step-10", "run", "weights/step-10")
    assert gcs_emulator.keys(bucket) == sorted([*CHECKPOINT, *NEIGHBOURS])


def test_a_bucket_at_the_environment_s_endpoint_is_not_the_cloud_s_bucket(
    cloud: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One bucket name at two endpoints is two stores, whichever way the endpoint is named."""
    location = parse_location(f"{cloud.scheme}://same-name/store")
    assert location is not None
    at_the_emulator = ObjectStorage.open(location).place_scope
    for name in cloud.environment():
        monkeypatch.delenv(name)
    for name, value in cloud.credentials.items():
        monkeypatch.setenv(name, value)
    in_the_cloud = ObjectStorage.open(location).place_scope
    assert at_the_emulator != in_the_cloud
