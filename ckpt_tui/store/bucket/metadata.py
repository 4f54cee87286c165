"""A bucket store's metadata, shared by everyone who opens the bucket.

`MetaDB` keeps a folder store's metadata in SQLite beside the folders; in a bucket the same
facts live in two JSON documents under `<prefix>/.ckpt-tui/`:
- `store.json`: the store id (made once with a create-only write, so two first openers agree
  on one id) and when the store was made;
- `meta.json`: each checkpoint's created, expires, published and user metadata, and each
  run's last change. Every change is a conditional update of the latest version
  (`versioned.update_doc`): a change made meanwhile by another writer is kept, not lost.

`BucketMeta` answers as `MetaDB` does (`rows`, `run_changes`, `apply`, `store_id`), so the
store's ledger works over either. What only measures the objects (the cached size and the
fingerprint of `settle.py`) stays in memory: a change that alters only those writes nothing.
A read-only BucketMeta changes its memory only, and never makes a store id.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import replace

import msgspec

from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.bucket.versioned import (
    ConditionalWrites,
    read_doc,
    update_doc,
)
from ckpt_tui.store.meta import Key, Row

STORE_DOC = "store.json"
META_DOC = "meta.json"


class StoreDoc(msgspec.Struct, frozen=True):
    store_id: str
    created_us: int


class SharedRow(msgspec.Struct, frozen=True, omit_defaults=True):
    """What everyone opening the bucket must see the same of one checkpoint."""

    created_us: int
    expires_us: int | None = None
    public: bool = False
    user_metadata: dict[str, str] | None = None


class MetaDoc(msgspec.Struct, frozen=True):
    version: int = 1
    checkpoints: dict[str, dict[str, SharedRow]] = {}
    """run id -> checkpoint id -> its shared metadata."""
    runs: dict[str, int] = {}
    """run id -> when a checkpoint of it was last changed through a store (microseconds)."""


def shared(row: Row) -> SharedRow:
    return SharedRow(row.created_us, row.expires_us, row.public, row.user_metadata)


class BucketMeta:
    """The metadata of a store in a bucket (see the module's docstring)."""

    def __init__(self, place: BucketPlace, readonly: bool, now_us: int) -> None:
        self.place = place
        self.readonly = readonly
        self.writes = ConditionalWrites()
        self._now_us = now_us
        self._doc = read_doc(place, place.meta_key(META_DOC), MetaDoc).doc or MetaDoc()
        self._measured: dict[Key, Row] = {}
        """The last rows given: their size and fingerprint (never written to the bucket)."""
        kept = read_doc(place, place.meta_key(STORE_DOC), StoreDoc).doc
        self.store_id = kept.store_id if kept is not None else None
        """The store's id; None while the bucket has none (nothing was written there yet)."""

    @property
    def problem(self) -> str | None:
        """Said when the server ignores conditional writes (found on the first write)."""
        return self.writes.problem

    def ensure_store_id(self) -> str:
        """The bucket's store id, made now (create-only: the first writer's id wins)."""
        if self.store_id is None:
            made = StoreDoc(f"bucket-{uuid.uuid4().hex}", self._now_us)
            doc = update_doc(
                self.place,
                self.place.meta_key(STORE_DOC),
                StoreDoc,
                lambda kept: made if kept is None else None,
                self.writes,
            )
            self.store_id = (doc or made).store_id
        return self.store_id

    def reload(self) -> None:
        """Read the latest metadata (another writer's changes)."""
        self._doc = read_doc(self.place, self.place.meta_key(META_DOC), MetaDoc).doc or MetaDoc()

    def close(self) -> None:
        """Nothing to close: every change was written when it was made."""

    def rows(self, run_id: str | None = None) -> list[Row]:
        runs = self._doc.checkpoints if run_id is None else {run_id: self._run(run_id)}
        return [
            self._row(run, checkpoint, row)
            for run, checkpoints in runs.items()
            for checkpoint, row in checkpoints.items()
        ]

    def _run(self, run_id: str) -> dict[str, SharedRow]:
        return self._doc.checkpoints.get(run_id, {})

    def _row(self, run_id: str, checkpoint_id: str, kept: SharedRow) -> Row:
        row = Row(run_id, checkpoint_id, kept.created_us, kept.expires_us, kept.public)
        row.user_metadata = None if kept.user_metadata is None else dict(kept.user_metadata)
        measured = self._measured.get((run_id, checkpoint_id))
        if measured is not None:
            row = replace(
                row,
                size_bytes=measured.size_bytes,
                files_fp=measured.files_fp,
                files_seen_us=measured.files_seen_us,
            )
        return row

    def run_changes(self) -> dict[str, int]:
        return dict(self._doc.runs)

    def apply(
        self,
        *,
        upsert: Iterable[Row] = (),
        delete: Iterable[Key] = (),
        touch: dict[str, int] | None = None,
        drop_runs: Iterable[str] = (),
    ) -> None:
        """One change, as `MetaDB.apply`: one conditional write of the shared document,
        made over its latest version (nothing is written when only measurements change)."""
        upsert, delete, drop_runs = list(upsert), list(delete), list(drop_runs)
        for row in upsert:
            self._measured[(row.run_id, row.checkpoint_id)] = row
        for key in delete:
            self._measured.pop(key, None)

        def change(doc: MetaDoc | None) -> MetaDoc | None:
            return changed(doc or MetaDoc(), upsert, delete, touch or {}, drop_runs)

        if self.readonly:
            self._doc = change(self._doc) or self._doc
            return
        self.ensure_store_id()
        doc_key = self.place.meta_key(META_DOC)
        self._doc = update_doc(self.place, doc_key, MetaDoc, change, self.writes) or MetaDoc()


def changed(
    doc: MetaDoc,
    upsert: list[Row],
    delete: list[Key],
    touch: dict[str, int],
    drop_runs: list[str],
) -> MetaDoc | None:
    """`doc` with the change made, or None when the change leaves it as it is."""
    checkpoints = {run: dict(rows) for run, rows in doc.checkpoints.items()}
    for row in upsert:
        checkpoints.setdefault(row.run_id, {})[row.checkpoint_id] = shared(row)
    for run_id, checkpoint_id in delete:
        checkpoints.get(run_id, {}).pop(checkpoint_id, None)
    runs = {**doc.runs, **touch}
    for run_id in drop_runs:
        runs.pop(run_id, None)
    checkpoints = {run: rows for run, rows in checkpoints.items() if rows}
    if checkpoints == doc.checkpoints and runs == doc.runs:
        return None
    return MetaDoc(doc.version, checkpoints, runs)
