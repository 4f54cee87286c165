"""A bucket checkpoint's files, for downloads: what they are, and each one served.

The files are what a delete would take (`BucketDeleter.listed`): every object under
`<prefix>/<checkpoint>/` by its key below that, folder markers left out and a listed key
outside the prefix refused; or, when there is none, the one object `<prefix>/<checkpoint>`
under its own name (a `torch.save` file). Objects still being written under a temporary
name are left out, as a folder's are (`ckpt_tui.store.files.strip_temp`).

A file is served by ranged GETs of the version first seen (`If-Match` its ETag, and the
answer's ETag checked too, for servers that ignore the header), `WINDOW_BYTES` at a time: a
file replaced while it is sent fails the answer (the client sees a short body and asks
again) rather than mixing two versions. On `file://` (obstore's local store) the files are
listed and read by the folder code instead (`ckpt_tui.store.export`: folder descriptors,
no link followed), as a delete there goes through `local_delete`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Generator
from typing import TYPE_CHECKING

import obstore
from obstore.exceptions import BaseError

from ckpt_tui.store import export
from ckpt_tui.store.blobs.objects import reason
from ckpt_tui.store.bucket.place import BucketPlace, local_root, refuse_links
from ckpt_tui.store.errors import NotFoundError, StorageFailedError, StoreError
from ckpt_tui.store.export import MAX_FILES, CheckpointFile, OpenedFile, ServedFile
from ckpt_tui.store.files import strip_temp
from ckpt_tui.store.layout import checked_file_parts

if TYPE_CHECKING:
    from obstore import GetOptions, ObjectMeta

    from ckpt_tui.store.bucket.deleting import BucketDeleter

WINDOW_BYTES = 32 * 1024 * 1024
"""Bytes one ranged GET fetches whole before they are sent on a chunk at a time: a client
that reads slowly then never holds a request to the bucket open (obstore ends a request
after 30 s), and a file being sent holds at most this much in memory. Each GET costs a
round trip and the server's own work: one 256 MiB file from moto on loopback
(`--local s3://… download`, two runs each) came at 35-38 MiB/s in windows of 8 MiB, 73-76
in windows of 32 MiB and 110-111 in windows of 128 MiB; 32 keeps the memory of the four
files a download fetches at once at 128 MiB, and a GET under 30 s down to about 1 MiB/s."""


def checkpoint_files(place: BucketPlace, deleter: BucketDeleter, key: str) -> list[CheckpointFile]:
    """The files of the checkpoint at `key` (its objects' key, checked by the caller)."""
    folder = local_root(place)
    if folder is not None:
        refuse_links(place, [key])
        return export.list_files(os.path.join(folder, key))
    listed = deleter.listed(key, MAX_FILES)
    if not listed:
        return [CheckpointFile(key.rpartition("/")[2], _head(place, key)["size"])]
    files: list[CheckpointFile] = []
    for found, meta in sorted(listed.items()):
        name = found[len(key) + 1 :]
        if not strip_temp(name.rpartition("/")[2])[1]:
            checked_file_parts(name)  # a key no folder could hold is refused, not skipped
            files.append(CheckpointFile(name, meta["size"]))
    return files


def open_file(place: BucketPlace, deleter: BucketDeleter, key: str, name: str) -> ServedFile:
    """The file `name` of the checkpoint at `key`; NotFoundError when it has none such."""
    folder = local_root(place)
    if folder is not None:
        refuse_links(place, [key])
        return OpenedFile(export.open_file(os.path.join(folder, key), name))
    parts = checked_file_parts(name)
    if strip_temp(parts[-1])[1]:
        raise NotFoundError(f"no file {name!r} in this checkpoint (not a finished file)")
    try:
        return ObjectFile(place, f"{key}/{name}", _head(place, f"{key}/{name}"))
    except NotFoundError:
        # a checkpoint that is one object (and no folder of the same name) is that object
        if parts != [key.rpartition("/")[2]] or deleter.listed_keys(key):
            raise
    return ObjectFile(place, key, _head(place, key))


def _head(place: BucketPlace, key: str) -> ObjectMeta:
    try:
        return obstore.head(place.store, key)
    except FileNotFoundError:
        raise NotFoundError(f"no file {key} in {place.name}") from None
    except (BaseError, OSError) as exc:
        raise StorageFailedError(f"reading {key} in {place.name} failed ({reason(exc)})") from exc


class ObjectFile:
    """A `ServedFile` read from one object of a bucket, by ranged GETs of one version."""

    def __init__(self, place: BucketPlace, key: str, meta: ObjectMeta) -> None:
        self._place, self._key = place, key
        self._version = meta["e_tag"]
        self.size = meta["size"]
        identity = f"{key}\0{self._version}\0{self.size}\0{meta['last_modified'].isoformat()}"
        self.etag = '"' + hashlib.sha256(identity.encode()).hexdigest()[:32] + '"'

    def chunks(self, start: int, end: int, chunk_bytes: int) -> Generator[bytes, None, None]:
        offset = start
        while offset < end:
            window = self._read(offset, min(end, offset + WINDOW_BYTES))
            for at in range(0, len(window), chunk_bytes):
                yield bytes(window[at : at + chunk_bytes])
            offset += len(window)

    def _read(self, start: int, end: int) -> memoryview:
        options: GetOptions = {"range": (start, end)}
        if self._version:
            options["if_match"] = self._version
        try:
            answer = obstore.get(self._place.store, self._key, options=options)
            data = memoryview(answer.bytes())
        except (BaseError, OSError) as exc:
            raise StorageFailedError(
                f"reading {self._key} in {self._place.name} failed ({reason(exc)})"
            ) from exc
        if (self._version and answer.meta["e_tag"] != self._version) or not data:
            raise StoreError(f"{self._key} in {self._place.name} changed while it was sent")
        return data

    def close(self) -> None:
        """Nothing is held between reads."""
