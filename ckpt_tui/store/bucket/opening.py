"""Opening a bucket store from a location people give (`--local`, `serve`, the config)."""

from __future__ import annotations

from ckpt_tui.locations import UnsupportedLocationError, parse_location
from ckpt_tui.store.blobs.objects import ObjectStorage
from ckpt_tui.store.bucket.store import BucketStore
from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.settle import SETTLE_SECONDS
from ckpt_tui.timekeeping.clock import SYSTEM_CLOCK, Clock


def open_bucket_store(
    text: str,
    *,
    endpoint: str | None = None,
    region: str | None = None,
    clock: Clock = SYSTEM_CLOCK,
    settle_seconds: float = SETTLE_SECONDS,
    readonly: bool = False,
    first_look_behind: bool = False,
    keep_store_id: bool = False,
) -> BucketStore:
    """The store at bucket location `text`, read once; StoreError saying why it cannot be
    opened (a bucket that cannot be listed opens, with that problem: see `BucketStore`;
    `first_look_behind`, `keep_store_id`: see `BucketStore.open_bucket`)."""
    try:
        location = parse_location(text, endpoint, region)
    except UnsupportedLocationError as exc:
        raise StoreError(str(exc)) from None
    if location is None:
        raise StoreError(f"{text} is not a bucket location (s3://, gs://, az://)")
    try:
        storage = ObjectStorage.open(location)
    except OSError as exc:
        raise StoreError(exc.strerror or str(exc)) from None
    return BucketStore.open_bucket(
        storage,
        clock,
        settle_seconds=settle_seconds,
        readonly=readonly,
        first_look_behind=first_look_behind,
        keep_store_id=keep_store_id,
    )
