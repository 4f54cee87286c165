"""The metadata of a store in a bucket, shared by everyone who opens it (against moto)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from obstore.store import LocalStore

from ckpt_tui.store.bucket import versioned
from ckpt_tui.store.bucket.metadata import META_DOC, STORE_DOC, BucketMeta, MetaDoc
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.errors import StoreBusyError, StoreError
from ckpt_tui.store.meta import Row
from tests.support.bucket_places import bucket_place
from tests.support.bucket_races import RACE_NOW_US, b_wins_the_race
from tests.support.live_server import run_server
from tests.support.s3_faults import S3Faults
from tests.support.s3_server import S3Server

NOW_US = 1_700_000_000_000_000


def opened(place: BucketPlace, readonly: bool = False) -> BucketMeta:
    return BucketMeta(place, readonly, NOW_US)


def stored(s3: S3Server, bucket: str, name: str) -> dict[str, object]:
    data = s3.client.get_object(Bucket=bucket, Key=f"store/.ckpt-tui/{name}")["Body"].read()
    loaded: dict[str, object] = json.loads(data)
    return loaded


def row(checkpoint_id: str, **changes: object) -> Row:
    made = Row("run", checkpoint_id, NOW_US)
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def test_what_one_writer_changes_every_other_opener_sees(s3: S3Server, s3_bucket: str) -> None:
    place = bucket_place(s3.endpoint, s3_bucket)
    first = opened(place)
    first.apply(upsert=[row("a", public=True, expires_us=NOW_US + 5)], touch={"run": NOW_US})
    again = opened(place)
    assert [(r.checkpoint_id, r.public, r.expires_us) for r in again.rows()] == [
        ("a", True, NOW_US + 5)
    ]
    assert again.run_changes() == {"run": NOW_US}
    assert again.store_id == first.store_id is not None


def test_two_writers_racing_lose_no_update(
    s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writer B changes the document between writer A's read and A's write: A's conditional
    write is refused, A reads again and makes its change over B's. Both changes are kept."""
    place = bucket_place(s3.endpoint, s3_bucket)
    a, reads = b_wins_the_race(place, monkeypatch)
    kept = stored(s3, s3_bucket, META_DOC)["checkpoints"]
    assert isinstance(kept, dict)
    assert sorted(kept["run"]) == ["from-a", "from-b", "start"]
    assert kept["run"]["from-b"]["public"] is True
    assert kept["run"]["from-a"]["expires_us"] == RACE_NOW_US + 7
    assert reads >= 2  # A read again after losing the race
    assert a.writes.supported is True and a.problem is None


def test_a_writer_that_keeps_losing_gives_up_having_changed_nothing(
    s3: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = bucket_place(s3.endpoint, s3_bucket)
    a, b = opened(place), opened(place)
    a.apply(upsert=[row("start", public=True)])
    real_read = versioned.read_doc
    rival = iter(range(1000))
    inside_b: list[bool] = []

    def read_then_b_writes(p: BucketPlace, key: str, kind: type[object]) -> object:
        found = real_read(p, key, kind)
        if key.endswith(META_DOC) and not inside_b:
            inside_b.append(True)
            b.apply(upsert=[row(f"b-{next(rival)}", public=True)])  # wins every race
            inside_b.clear()
        return found

    monkeypatch.setattr(versioned, "read_doc", read_then_b_writes)
    with pytest.raises(StoreBusyError, match="nothing was changed"):
        a.apply(upsert=[row("from-a", public=True)])
    monkeypatch.setattr(versioned, "read_doc", real_read)
    kept = stored(s3, s3_bucket, META_DOC)["checkpoints"]
    assert isinstance(kept, dict)
    assert "from-a" not in kept["run"]
    assert len([name for name in kept["run"] if name.startswith("b-")]) == versioned.UPDATE_ATTEMPTS


def test_two_first_openers_agree_on_one_store_id(s3: S3Server, s3_bucket: str) -> None:
    place = bucket_place(s3.endpoint, s3_bucket)
    a, b = opened(place), opened(place)
    assert a.store_id is None and b.store_id is None  # nothing written yet
    made = b.ensure_store_id()
    assert a.ensure_store_id() == made  # a's create-only write lost: it takes b's id
    assert stored(s3, s3_bucket, STORE_DOC)["store_id"] == made


def test_a_plain_checkpoint_measurements_and_a_readonly_store_write_nothing(
    s3: S3Server, s3_bucket: str
) -> None:
    place = bucket_place(s3.endpoint, s3_bucket)
    browsing = opened(place, readonly=True)
    browsing.apply(upsert=[row("a", public=True)])
    assert browsing.rows()[0].public  # in memory
    assert s3.keys(s3_bucket) == []
    writer = opened(place)
    writer.apply(upsert=[row("plain")], touch={"run": NOW_US})  # seen, never changed
    assert s3.keys(s3_bucket) == []
    writer.apply(upsert=[row("a", public=True)])
    before = s3.client.head_object(Bucket=s3_bucket, Key=place.meta_key(META_DOC))["ETag"]
    writer.apply(upsert=[row("a", public=True, size_bytes=10, files_fp="fp")])
    after = s3.client.head_object(Bucket=s3_bucket, Key=place.meta_key(META_DOC))["ETag"]
    assert before == after
    assert [r.checkpoint_id for r in opened(place).rows()] == ["a"]


def test_a_stale_row_does_not_undo_another_writers_change(s3: S3Server, s3_bucket: str) -> None:
    """A writer whose rows predate another's publish changes only what it changed."""
    place = bucket_place(s3.endpoint, s3_bucket)
    a = opened(place)
    a.apply(upsert=[row("x", expires_us=NOW_US + 1)])
    b = opened(place)
    b.apply(upsert=[row("x", expires_us=NOW_US + 1, public=True)])  # b publishes
    a.apply(upsert=[row("x", expires_us=NOW_US + 9)])  # a's row still says private
    kept = opened(place).rows()
    assert [(r.public, r.expires_us) for r in kept] == [(True, NOW_US + 9)]


def test_a_damaged_document_is_named_with_what_to_do(s3: S3Server, s3_bucket: str) -> None:
    place = bucket_place(s3.endpoint, s3_bucket)
    s3.put(s3_bucket, place.meta_key(META_DOC), b'{"checkpoints": [1, 2]}')
    with pytest.raises(StoreError, match=r"meta\.json is damaged .*move it away"):
        opened(place)


def test_a_server_that_ignores_conditional_writes_is_detected_and_said(
    s3: S3Server, s3_bucket: str
) -> None:
    faults = S3Faults(s3.endpoint)
    faults.ignore_conditions = True
    with run_server(faults) as endpoint:
        place = bucket_place(endpoint, s3_bucket)
        meta = opened(place)
        assert meta.problem is None  # looking probes nothing
        meta.apply(upsert=[row("a", public=True)])
        assert meta.writes.supported is False
        assert meta.problem is not None
        assert "ignores conditional writes (If-None-Match, If-Match)" in meta.problem
        assert "may lose" in meta.problem
        assert opened(place).rows()[0].public  # the write itself was made
    assert not [key for key in s3.keys(s3_bucket) if "probe-" in key]  # no scratch left


def test_a_server_with_conditional_writes_is_trusted(s3: S3Server, s3_bucket: str) -> None:
    meta = opened(bucket_place(s3.endpoint, s3_bucket))
    meta.apply(upsert=[row("a", public=True)])
    assert meta.writes.supported is True
    assert meta.problem is None


def never(_: MetaDoc | None) -> MetaDoc | None:
    return None


def test_a_change_that_changes_nothing_writes_nothing(s3: S3Server, s3_bucket: str) -> None:
    place = bucket_place(s3.endpoint, s3_bucket)
    change: Callable[[MetaDoc | None], MetaDoc | None] = never
    versioned.update_doc(place, place.meta_key(META_DOC), MetaDoc, change, opened(place).writes)
    assert [key for key in s3.keys(s3_bucket) if not key.split("/")[-1].startswith("probe-")] == []


def test_a_store_without_if_match_is_detected_and_still_written(tmp_path: Path) -> None:
    """obstore's local store (the demo's `file://` bucket) has create-only writes but no
    If-Match: said, and the change is made."""
    place = BucketPlace(LocalStore(tmp_path), "p", f"file://{tmp_path}/p")
    meta = opened(place)
    meta.apply(upsert=[row("a", public=True)])
    assert meta.writes.supported is False
    assert meta.problem is not None and "ignores conditional writes (If-Match)" in meta.problem
    assert opened(place).rows()[0].public
