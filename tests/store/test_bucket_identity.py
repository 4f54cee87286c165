"""What tells two bucket stores apart before the bucket keeps a store id: what its listing
found, else its location and endpoint."""

from __future__ import annotations

import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.base import Entry
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket.identity import bucket_id, listed_id
from ckpt_tui.store.bucket.tree import ListedTree


def id_at(endpoint: str | None, location: str = "s3://team/checkpoints") -> str:
    parsed = parse_location(location, endpoint, "us-east-1")
    assert parsed is not None
    return bucket_id(ObjectStorage.open(parsed))


def test_one_bucket_name_at_two_endpoints_is_two_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    minio = id_at("http://minio.example:9000")
    assert minio != id_at("http://other.example:9000")
    assert minio != id_at("http://minio.example:9001")
    assert minio != id_at(None)  # the cloud's own endpoint
    assert minio != id_at("http://minio.example:9000", "s3://team/other")


def test_one_endpoint_spelled_two_ways_is_one_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    minio = id_at("http://minio.example:9000")
    assert minio == id_at("http://minio.example:9000/") == id_at("HTTP://MinIO.Example:9000")
    assert id_at("https://s3.example") == id_at("https://s3.example:443/")
    assert id_at("http://localhost:9000") == id_at("http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://minio.example:9000/")
    assert id_at(None) == minio  # the endpoint from the environment is the same endpoint


def storage_at(endpoint: str, location: str = "s3://team/checkpoints") -> ObjectStorage:
    parsed = parse_location(location, endpoint, "us-east-1")
    assert parsed is not None
    return ObjectStorage.open(parsed)


def id_listing(storage: ObjectStorage, *objects: tuple[str, str]) -> str:
    """The id of `storage` whose listing found `objects` (key, ETag)."""
    entries = [
        (key, Entry(key.rsplit("/", 1)[-1], False, 10, 1_700_000_000, tag)) for key, tag in objects
    ]
    return listed_id(storage, ListedTree(storage, entries).first_object())


def test_a_listed_bucket_is_one_store_at_every_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    direct, proxied = storage_at("http://minio.example:9000"), storage_at("http://proxy:8080")
    held = ("checkpoints/run/a/model.safetensors", "e1"), ("checkpoints/run/b/model.pt", "e2")
    assert id_listing(direct, *held) == id_listing(proxied, *reversed(held))
    # the store's own documents, written as it looks, do not change it
    own = ("checkpoints/.ckpt-tui/meta.json", "e0")
    assert id_listing(direct, own, *held) == id_listing(proxied, *held)
    # what another bucket of the same name holds does
    assert id_listing(direct, *held) != id_listing(
        proxied, ("checkpoints/run/a/model.safetensors", "e9")
    )
    assert id_listing(direct, *held) != id_listing(
        storage_at("http://proxy:8080", "s3://team/other"), *held
    )


def test_a_bucket_that_holds_nothing_is_told_apart_by_its_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    direct, proxied = storage_at("http://minio.example:9000"), storage_at("http://proxy:8080")
    own = ("checkpoints/.ckpt-tui/meta.json", "e0")
    assert id_listing(direct) == bucket_id(direct) != id_listing(proxied, own) == bucket_id(proxied)
