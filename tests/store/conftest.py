"""Fixtures of the store's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import layouts as L
from tests.support.s3_server import S3Server


@pytest.fixture
def trainer_bucket(tmp_path: Path, s3: S3Server, s3_bucket: str) -> str:
    """Two Trainer saves (`out/checkpoint-100` and `-200`) under the prefix `p` of a fresh
    bucket on the test S3 server; its location."""
    L.hf_trainer_output(tmp_path / "out", steps=(100, 200))
    s3.upload(s3_bucket, "p", tmp_path)
    return f"s3://{s3_bucket}/p"
