"""Per-checkpoint metadata in SQLite (`STORE/.ckpt-tui/meta.sqlite3`, WAL mode).

The folders are the truth for which checkpoints exist; this file keeps what folders cannot say:
created, expires_at, public, user_metadata, and the cached size. Times are integer microseconds.
Every change is one transaction (`apply`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from ckpt_tui.store.errors import StoreError
from ckpt_tui.store.storage import is_storage_failure, storage_error

LOCK_WAIT_SECONDS = 5.0
"""How long a write waits while another program holds the metadata file's lock before it
fails (503, try again): SQLite's own default."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    expires_us INTEGER,
    public INTEGER NOT NULL DEFAULT 0,
    user_metadata TEXT,
    size_bytes INTEGER,
    files_fp TEXT,
    files_seen_us INTEGER,
    files_listing BLOB,
    PRIMARY KEY (run_id, checkpoint_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    last_change_us INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS store (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS found (
    path TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    finding BLOB NOT NULL
) WITHOUT ROWID;
"""
_COLUMNS = (
    "run_id, checkpoint_id, created_us, expires_us, public, user_metadata, size_bytes, "
    "files_fp, files_seen_us, files_listing"
)
_PLACES = ", ".join("?" * len(_COLUMNS.split(",")))
_ADDED_COLUMNS = (("files_fp", "TEXT"), ("files_seen_us", "INTEGER"), ("files_listing", "BLOB"))
"""Columns newer than the first schema, added to an older file when it is opened."""

Key = tuple[str, str]


class Row(msgspec.Struct, gc=False):
    """One checkpoint's metadata row. A struct the garbage collector does not track (it can
    hold no reference cycle: strings, numbers, a dict of strings): a store of 100,000 keeps
    100,000 rows, which every full collection would otherwise walk; made in C, reading the
    100,000 rows of a warm open took 0.15 s instead of 0.21 (the SQLite fetch alone: 0.15)."""

    run_id: str
    checkpoint_id: str
    created_us: int
    expires_us: int | None = None
    public: bool = False
    user_metadata: dict[str, str] | None = None
    size_bytes: int | None = None
    files_fp: str | None = None
    """Fingerprint of the files `size_bytes` measured (see `settle.py`)."""
    files_seen_us: int | None = None
    """Since when those exact files have been there."""
    files_listing: bytes | None = None
    """The names under the folder when `files_fp` was made (`settle.FilesLook.listing`)."""

    def values(self) -> tuple[object, ...]:
        meta = None if self.user_metadata is None else json.dumps(self.user_metadata)
        return (
            self.run_id,
            self.checkpoint_id,
            self.created_us,
            self.expires_us,
            int(self.public),
            meta,
            self.size_bytes,
            self.files_fp,
            self.files_seen_us,
            self.files_listing,
        )


def _rows(cursor: Iterable[Any]) -> list[Row]:
    """The rows of a `SELECT {_COLUMNS}` (a warm open reads 100,000: one comprehension)."""
    loads = json.loads
    return [
        Row(
            run_id,
            checkpoint_id,
            created,
            expires,
            bool(public),
            None if meta is None else loads(meta),
            size,
            fp,
            seen,
            listing,
        )
        for run_id, checkpoint_id, created, expires, public, meta, size, fp, seen, listing in cursor
    ]


class MetaDB:
    """The SQLite connection, shared by threads under the Store's lock."""

    def __init__(self, conn: sqlite3.Connection, derived_id: str) -> None:
        self._conn = conn
        self.derived_id = derived_id
        """The id this folder has before one is kept (`ckpt_tui.store.opening.derived_store_id`)."""
        conn.executescript(_SCHEMA)
        present = {info[1] for info in conn.execute("PRAGMA table_info(checkpoints)")}
        with conn:
            for name, kind in _ADDED_COLUMNS:
                if name not in present:
                    conn.execute(f"ALTER TABLE checkpoints ADD COLUMN {name} {kind}")
        self.store_id = self._read_store_id()
        """The store's id: the one kept in the metadata, else the folder's derived id (never
        None: a folder never written still has one, so a read-only server of it and a
        writable client of it are seen to be one store)."""

    def _read_store_id(self) -> str:
        found = self._conn.execute("SELECT value FROM store WHERE key = 'id'").fetchone()
        return self.derived_id if found is None else str(found[0])

    def ensure_store_id(self) -> None:
        """Keep the store's id once its metadata file is written (made, or opened to write):
        the id it reported before (the derived one), kept for good, so that every reader of
        the folder, before and after, reports one id and a moved folder keeps it."""
        with self._conn:
            self._conn.execute(
                "INSERT OR IGNORE INTO store (key, value) VALUES ('id', ?)", (self.derived_id,)
            )
        self.store_id = self._read_store_id()

    @classmethod
    def open_writable(cls, path: Path, derived_id: str) -> MetaDB:
        try:
            conn = sqlite3.connect(path, timeout=LOCK_WAIT_SECONDS, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            meta = cls(conn, derived_id)
            meta.ensure_store_id()
            return meta
        except sqlite3.DatabaseError as exc:
            if is_storage_failure(exc):  # the file is fine; the disk is not
                raise storage_error(exc, f"opening the metadata file {path}") from exc
            raise StoreError(
                f"the metadata file {path} cannot be used ({exc}); move it away and reopen: "
                "checkpoints stay, but publish state, TTLs and metadata are reset"
            ) from exc

    @classmethod
    def open_readonly(cls, path: Path, derived_id: str) -> MetaDB:
        """An in-memory copy of `path` (if readable), so reconciling never writes to disk."""
        memory = sqlite3.connect(":memory:", check_same_thread=False)
        if path.is_file():
            # immutable=1 creates no -wal/-shm files; it is exact when no WAL file is pending
            has_wal = path.with_name(path.name + "-wal").exists()
            queries = ("mode=ro", "immutable=1") if has_wal else ("immutable=1", "mode=ro")
            for query in queries:
                try:
                    source = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True)
                    try:
                        source.backup(memory)
                        break
                    finally:
                        source.close()
                except sqlite3.Error:
                    continue  # e.g. a WAL file that cannot be opened read-only
        return cls(memory, derived_id)

    def persist(self, path: Path) -> None:
        """Write this (in-memory) metadata to the new file `path` and keep working on it."""
        saved = MetaDB.open_writable(path, self.derived_id)
        try:
            self._conn.backup(saved._conn)
            saved._conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            saved.close()
            if is_storage_failure(exc):
                raise storage_error(exc, f"writing the metadata file {path}") from exc
            raise StoreError(f"cannot write the metadata file {path}: {exc}") from exc
        self._conn.close()
        self._conn = saved._conn
        self.store_id = self._read_store_id()  # the backup replaced the file's whole content
        self.ensure_store_id()

    def close(self) -> None:
        self._conn.close()

    def rows(self, run_id: str | None = None) -> list[Row]:
        """Every row, or one run's rows."""
        if run_id is None:
            cursor = self._conn.execute(f"SELECT {_COLUMNS} FROM checkpoints")
        else:
            cursor = self._conn.execute(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE run_id = ?", (run_id,)
            )
        return _rows(cursor)

    def found(self) -> dict[str, tuple[str, bytes]]:
        """What discovery found in files' contents, by path (`discover.known`)."""
        rows = self._conn.execute("SELECT path, key, finding FROM found")
        return {path: (key, bytes(finding)) for path, key, finding in rows}

    def keep_found(self, learned: Mapping[str, tuple[str, bytes]], gone: Iterable[str]) -> None:
        """One transaction: keep new findings, forget those of paths no longer found."""
        with self._conn:
            self._run_each(
                "INSERT OR REPLACE INTO found (path, key, finding) VALUES (?, ?, ?)",
                [(path, key, finding) for path, (key, finding) in learned.items()],
            )
            self._run_each("DELETE FROM found WHERE path = ?", [(path,) for path in gone])

    def run_changes(self) -> dict[str, int]:
        """run_id -> time of the last change made through the store."""
        return dict(self._conn.execute("SELECT run_id, last_change_us FROM runs").fetchall())

    def apply(
        self,
        *,
        upsert: Iterable[Row] = (),
        delete: Iterable[Key] = (),
        touch: dict[str, int] | None = None,
        drop_runs: Iterable[str] = (),
    ) -> None:
        """One transaction: write rows, drop rows, record run changes, forget runs (a
        statement with nothing to do is not run: a delete makes two of the four)."""
        with self._conn:
            self._run_each(
                f"INSERT OR REPLACE INTO checkpoints ({_COLUMNS}) VALUES ({_PLACES})",
                [row.values() for row in upsert],
            )
            self._run_each(
                "DELETE FROM checkpoints WHERE run_id = ? AND checkpoint_id = ?", list(delete)
            )
            self._run_each(
                "INSERT OR REPLACE INTO runs (run_id, last_change_us) VALUES (?, ?)",
                list((touch or {}).items()),
            )
            self._run_each("DELETE FROM runs WHERE run_id = ?", [(r,) for r in drop_runs])

    def _run_each(self, statement: str, rows: list[Any]) -> None:
        if rows:
            self._conn.executemany(statement, rows)
