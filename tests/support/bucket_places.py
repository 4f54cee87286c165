"""A `BucketPlace` on a test S3 server (or on a fault-injecting proxy in front of it)."""

from __future__ import annotations

from obstore.store import S3Store

from ckpt_tui.store.bucket.place import BucketPlace
from tests.support.s3_server import DUMMY_KEY_ID, DUMMY_SECRET, REGION


def bucket_place(endpoint: str, bucket: str, prefix: str = "store") -> BucketPlace:
    """The store rooted at `s3://bucket/prefix` on the S3 server at `endpoint`."""
    store = S3Store(
        bucket,
        endpoint=endpoint,
        access_key_id=DUMMY_KEY_ID,
        secret_access_key=DUMMY_SECRET,
        region=REGION,
        client_options={"allow_http": True},
    )
    name = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
    return BucketPlace(store, prefix, name)
