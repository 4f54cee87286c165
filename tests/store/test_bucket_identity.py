"""What tells two bucket stores apart: the derived store id (before the bucket keeps one)."""

from __future__ import annotations

import pytest

from ckpt_tui.locations import parse_location
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket.store import bucket_id


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
