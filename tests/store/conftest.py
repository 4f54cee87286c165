"""The test S3 server (moto) for the bucket tests (until the shared one is in tests/conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.s3_server import S3Server, s3_server


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture
def s3_bucket(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    return s3.make_bucket()
