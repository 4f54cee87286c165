"""Two writers of a bucket store's metadata racing: B's write lands between A's read and
A's conditional write, on whatever server the place is on."""

from __future__ import annotations

import pytest

from ckpt_tui.store.bucket import versioned
from ckpt_tui.store.bucket.metadata import META_DOC, BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.meta import Row

RACE_NOW_US = 1_700_000_000_000_000
"""The writers' "now"; A's change is an expiry a little after it."""


def b_wins_the_race(place: BucketPlace, monkeypatch: pytest.MonkeyPatch) -> tuple[BucketMeta, int]:
    """Writer A publishes "start", then changes "from-a" (expiry RACE_NOW_US + 7) while
    writer B publishes "from-b" right after A's first read of the document. (A, how many
    times A read the document for its change: 2 or more once A lost the race and read again.)"""
    a, b = BucketMeta(place, False, RACE_NOW_US), BucketMeta(place, False, RACE_NOW_US)
    a.apply(upsert=[Row("run", "start", RACE_NOW_US, public=True)])
    b.reload()
    real_read = versioned.read_doc
    reads: list[str] = []

    def read_then_b_writes(p: BucketPlace, key: str, kind: type[object]) -> object:
        found = real_read(p, key, kind)
        reads.append(key)
        if key.endswith(META_DOC) and reads.count(key) == 1:
            b.apply(upsert=[Row("run", "from-b", RACE_NOW_US, public=True)])  # wins the race
        return found

    with monkeypatch.context() as patch:
        patch.setattr(versioned, "read_doc", read_then_b_writes)
        a.apply(upsert=[Row("run", "from-a", RACE_NOW_US, expires_us=RACE_NOW_US + 7)])
    return a, reads.count(place.meta_key(META_DOC))
