"""A bucket store's metadata, shared by everyone who opens the bucket.

`MetaDB` keeps a folder store's metadata in SQLite beside the folders; in a bucket the facts
others must see live in two JSON documents under `<prefix>/.ckpt-tui/`:
- `store.json`: the store id (made once with a create-only write, so two first openers agree
  on one id) and when the store was made;
- `meta.json`: the created, expires, published and user metadata of each checkpoint that has
  any (a checkpoint never published, given a TTL or metadata has no entry: its created time
  is its objects', the same for everyone), and each run's last change. Every change is a
  conditional update of the latest version (`versioned.update_doc`) that sets only the fields
  this writer changed: a change made meanwhile by another writer is kept, not lost.

`BucketMeta.apply` takes the ledger's rows (`MetaDB.apply`'s arguments) and writes nothing
when no shared field changed (a scan's measurements, a checkpoint seen for the first time).
A read-only BucketMeta changes its memory only, and never makes a store id.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import msgspec

from ckpt_tui.store.bucket.place import BucketPlace
from ckpt_tui.store.bucket.versioned import (
    ConditionalWrites,
    read_doc,
    update_doc,
)
from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.meta import Key, Row

logger = logging.getLogger("ckpt_tui.store")

STORE_DOC = "store.json"
META_DOC = "meta.json"
NO_DOC = ""
"""The version of a document the bucket does not hold (an ETag is never empty)."""


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

    def __init__(
        self, place: BucketPlace, readonly: bool, now_us: int, derived_id: str | None = None
    ) -> None:
        self.place = place
        self.lock = threading.Lock()
        """Held while a change is made: deletes change the metadata outside the store's lock."""
        self.derived_id = derived_id
        """The id the store reports while the bucket keeps none; kept by the first write
        (so a reader before and after it sees one id). None: a new random one."""
        self.readonly = readonly
        self.writes = ConditionalWrites()
        self._now_us = now_us
        self.doc = MetaDoc()
        """The document as last read or written by this writer (what its rows are based on)."""
        self.version: str | None = None
        """The ETag of the version `doc` was read as (`NO_DOC`: the bucket held none); None
        when not known (not read yet, or changed here since)."""
        self.store_id: str | None = None
        """The store's id; None while the bucket has none (nothing was written there yet)."""
        # The two documents are read side by side: one round trip of every open, not two.
        with ThreadPoolExecutor(1, thread_name_prefix="ckpt-tui-store-id") as reader:
            reading = reader.submit(self._read_store_id)
            self.reload()
            reading.result()

    @property
    def problem(self) -> str | None:
        """Said when the server ignores conditional writes (found on the first write)."""
        return self.writes.problem

    def read_store_id(self) -> None:
        """Read the kept store id again, if none was found before (another process may have
        kept one); a read that fails leaves it unknown (logged)."""
        with self.lock:
            if self.store_id is None:
                try:
                    self._read_store_id()
                except StoreError as exc:
                    logger.warning("the store id was not read: %s", exc)

    def _read_store_id(self) -> None:
        kept = read_doc(self.place, self.place.meta_key(STORE_DOC), StoreDoc).doc
        self.store_id = kept.store_id if kept is not None else None

    def ensure_store_id(self) -> str:
        """The bucket's store id, made now (create-only: the first writer's id wins)."""
        with self.lock:
            return self._ensure_store_id()

    def _ensure_store_id(self) -> str:
        if self.store_id is None:
            made = StoreDoc(self.derived_id or f"bucket-{uuid.uuid4().hex}", self._now_us)
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
        read = read_doc(self.place, self.place.meta_key(META_DOC), MetaDoc)
        self.doc = read.doc or MetaDoc()
        self.version = NO_DOC if read.doc is None else (read.e_tag or None)

    def is_version(self, listed: str | None) -> bool:
        """Whether `doc` is the version a listing found (`listed`: its ETag, `NO_DOC` when
        it found no document, None when it could not tell): a look then need not read it."""
        return listed is not None and listed == self.version

    def rows(self, run_id: str | None = None) -> list[Row]:
        """The checkpoints that have shared metadata, as rows (no measurements)."""
        runs = self.doc.checkpoints
        if run_id is not None:
            runs = {run_id: runs.get(run_id, {})}
        return [
            as_row(run, checkpoint, kept)
            for run, checkpoints in runs.items()
            for checkpoint, kept in checkpoints.items()
        ]

    def run_changes(self) -> dict[str, int]:
        return dict(self.doc.runs)

    def apply(
        self,
        *,
        upsert: Iterable[Row] = (),
        delete: Iterable[Key] = (),
        touch: dict[str, int] | None = None,
    ) -> None:
        """One change of the ledger's rows: one conditional write of the fields it changes
        (compared with `doc`), made over the latest version; nothing written when none."""
        edits = [edit for row in upsert if (edit := _edit(self.doc, row)) is not None]
        gone = [key for key in delete if key[1] in self.doc.checkpoints.get(key[0], {})]
        if not edits and not gone:
            return  # a run's last change alone is not worth a write
        change = Change(edits, gone, touch or {})
        with self.lock:
            self.version = None  # changed here: the next look reads the bucket's again
            if self.readonly:
                self.doc = change.made(self.doc) or self.doc
                return
            self._ensure_store_id()
            doc_key = self.place.meta_key(META_DOC)
            written = update_doc(self.place, doc_key, MetaDoc, change.made, self.writes)
            self.doc = written or MetaDoc()


def as_row(run_id: str, checkpoint_id: str, kept: SharedRow) -> Row:
    meta = None if kept.user_metadata is None else dict(kept.user_metadata)
    return Row(run_id, checkpoint_id, kept.created_us, kept.expires_us, kept.public, meta)


PLAIN = ("expires_us", "public", "user_metadata")
"""The fields whose values other than their defaults make a checkpoint worth an entry."""


@dataclass(frozen=True)
class Edit:
    """The fields one row sets on one checkpoint's entry."""

    key: Key
    fields: dict[str, object]
    whole: SharedRow
    """The row's shared part (the entry, when the latest document has none)."""


def _edit(doc: MetaDoc, row: Row) -> Edit | None:
    """What `row` changes of `doc`'s entry; None when nothing (or a plain new checkpoint)."""
    new = shared(row)
    old = doc.checkpoints.get(row.run_id, {}).get(row.checkpoint_id)
    if old is None:  # set what differs from a plain checkpoint (over another's new entry)
        plain = SharedRow(new.created_us)
        fields = {n: getattr(new, n) for n in PLAIN if getattr(new, n) != getattr(plain, n)}
        return Edit((row.run_id, row.checkpoint_id), fields, new) if fields else None
    fields = {
        name: getattr(new, name)
        for name in SharedRow.__struct_fields__
        if getattr(new, name) != getattr(old, name)
    }
    return Edit((row.run_id, row.checkpoint_id), fields, new) if fields else None


@dataclass(frozen=True)
class Change:
    """Edits and drops, made over whichever version of the document is the latest."""

    edits: list[Edit]
    gone: list[Key]
    touch: dict[str, int]

    def made(self, doc: MetaDoc | None) -> MetaDoc | None:
        """`doc` with the change made, or None when it leaves it as it is."""
        doc = doc or MetaDoc()
        checkpoints = {run: dict(rows) for run, rows in doc.checkpoints.items()}
        for edit in self.edits:
            run_id, checkpoint_id = edit.key
            rows = checkpoints.setdefault(run_id, {})
            kept = rows.get(checkpoint_id)
            rows[checkpoint_id] = (
                edit.whole if kept is None else msgspec.structs.replace(kept, **edit.fields)
            )
        for run_id, checkpoint_id in self.gone:
            checkpoints.get(run_id, {}).pop(checkpoint_id, None)
        checkpoints = {run: rows for run, rows in checkpoints.items() if rows}
        runs = {**doc.runs, **self.touch}
        if checkpoints == doc.checkpoints and runs == doc.runs:
            return None
        return MetaDoc(doc.version, checkpoints, runs)
