"""The ledger's metadata for a bucket store: `MetaDB` in memory, its shared part in the bucket.

The ledger, the watcher and the writer work over a `MetaDB`; a bucket store gives them this
one. Its SQLite database is in memory (a read-only folder store's is too) and holds every row
with its measurements; what others must see (`metadata.SharedRow`) is also written to the
bucket (`BucketMeta`), first: a write the bucket refuses raises and changes nothing here.

Rows are read with the bucket's latest entries laid over them, so a look shows what other
writers changed. A scan drops the entry of a checkpoint it found gone only if that entry was
there before the listing it judged by began (read at the previous look): an entry another
writer made for a checkpoint newer than the listing is never taken for a stale one. A scan's
writes (they carry no `touch`) are best effort, as `Ledger._record_scan` makes them on a full
disk; a change asked for fails whole.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ckpt_tui.store.blobs.base import Entry
from ckpt_tui.store.bucket.metadata import META_DOC, NO_DOC, STORE_DOC, BucketMeta
from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.meta import Key, MetaDB, Row

logger = logging.getLogger("ckpt_tui.store")


class SharedMetaDB(MetaDB):
    """See the module's docstring."""

    def __init__(self, bucket: BucketMeta, derived_id: str) -> None:
        super().__init__(sqlite3.connect(":memory:", check_same_thread=False), derived_id)
        self.bucket = bucket
        self.known_before: set[Key] = _keys(bucket)
        """Entries in the bucket before the latest listing began (see the docstring)."""
        self.store_id = bucket.store_id or derived_id
        self._listed_before = False
        self._listed_version: str | None = None
        """The version of the metadata document the latest whole listing found."""

    def ensure_store_id(self) -> None:
        self.store_id = self.bucket.ensure_store_id()

    def listed(self, listed_id: str, documents: ListedDocs) -> None:
        """What the latest whole listing found: the id from its objects
        (`identity.listed_id`), the store's id while the bucket keeps none and the one the
        first write keeps (a reader before and after it sees one id), and the store's own
        documents. A later look reads the kept id again when the listing found one: another
        process may have kept it since (the open read it for the first look)."""
        if self.bucket.store_id is None and self._listed_before and documents.store_id_kept:
            self.bucket.read_store_id()
        self._listed_before = True
        self._listed_version = documents.meta_version
        if self.bucket.store_id is not None:
            self.store_id = self.bucket.store_id
        else:
            self.store_id = self.bucket.derived_id = listed_id

    def rows(self, run_id: str | None = None) -> list[Row]:
        if run_id is None:  # a whole look: take other writers' changes
            self.known_before = _keys(self.bucket)
            listed, self._listed_version = self._listed_version, None
            # The listing gave the document's ETag: read it only when it is another version
            # (one round trip of every look, its last: the walk waits for it).
            if not self.bucket.is_version(listed):
                try:
                    self.bucket.reload()
                except StoreError as exc:
                    logger.warning("the shared metadata was not read again: %s", exc)
        local = {(row.run_id, row.checkpoint_id): row for row in super().rows(run_id)}
        for kept in self.bucket.rows(run_id):
            key = (kept.run_id, kept.checkpoint_id)
            row = local.get(key)
            if row is not None:
                kept.size_bytes, kept.files_fp = row.size_bytes, row.files_fp
                kept.files_seen_us = row.files_seen_us
            local[key] = kept
        return list(local.values())

    def run_changes(self) -> dict[str, int]:
        return {**super().run_changes(), **self.bucket.run_changes()}

    def apply(
        self,
        *,
        upsert: Iterable[Row] = (),
        delete: Iterable[Key] = (),
        touch: dict[str, int] | None = None,
        drop_runs: Iterable[str] = (),
    ) -> None:
        upsert, delete = list(upsert), list(delete)
        gone = [key for key in delete if touch is not None or key in self.known_before]
        try:
            self.bucket.apply(upsert=upsert, delete=gone, touch=touch)
        except StoreError as exc:
            if touch is not None:
                raise  # a change asked for: nothing was changed
            logger.warning("the scan's metadata was not saved in the bucket: %s", exc)
        if self.bucket.store_id is not None:
            self.store_id = self.bucket.store_id
        super().apply(upsert=upsert, delete=delete, touch=touch, drop_runs=drop_runs)


@dataclass(frozen=True)
class ListedDocs:
    """What a whole listing found of the store's own documents."""

    meta_version: str | None
    """The metadata document's ETag; `NO_DOC` when it is not there; None when unknown."""
    store_id_kept: bool
    """Whether the store id's document is there."""

    @classmethod
    def in_listing(cls, place: BucketPlace, stat: Callable[[str], Entry | None]) -> ListedDocs:
        """From `stat`, a whole listing's (key -> its entry, None when not listed)."""
        meta = stat(place.meta_key(META_DOC))
        version = NO_DOC if meta is None else (meta.tag or None)
        return cls(version, stat(place.meta_key(STORE_DOC)) is not None)


def _keys(bucket: BucketMeta) -> set[Key]:
    return {(row.run_id, row.checkpoint_id) for row in bucket.rows()}
